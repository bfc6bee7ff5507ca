#pragma once
// A ext4 canary's stack operations are the plain ones (probes/canary_ops/ops.hpp, PlainOps); this is
// how lab mode makes a ext4 filesystem.
#include "probes/canary_ops/ops.hpp"

namespace fsaudit::ext4 {

canary::PlainRecipe lab_recipe();

}  // namespace fsaudit::ext4
