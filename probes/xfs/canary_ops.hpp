#pragma once
// A XFS canary's stack operations are the plain ones (probes/canary_ops/ops.hpp, PlainOps); this is
// how lab mode makes a XFS filesystem.
#include "probes/canary_ops/ops.hpp"

namespace fsaudit::xfs {

canary::PlainRecipe lab_recipe();

}  // namespace fsaudit::xfs
