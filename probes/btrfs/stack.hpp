#pragma once
// The stack model of a btrfs filesystem (probes/stack/model.hpp), from what read_sysfs found: its
// block-group profiles and its members. Pure.
#include <optional>
#include <string_view>

#include "probes/btrfs/parse.hpp"
#include "probes/stack/model.hpp"

namespace fsaudit::btrfs {

// What a block-group profile (as sysfs spells it: single, dup, raid0, raid1, raid1c3, raid1c4,
// raid10, raid5, raid6) keeps of one block.
struct ProfileShape {
  int copies = 1;    // physical copies of a block
  int parity = 0;    // parity blocks per stripe
  int survives = 0;  // member devices it may lose (dup: 0, both copies sit on one device)
};
std::optional<ProfileShape> profile_shape(std::string_view profile);
// True where a bad copy can be rebuilt from another copy or from parity.
bool profile_is_redundant(std::string_view profile);

// Copies from the data profile (nullopt while a balance converts between two); member failures
// survived from the least redundant of data, metadata and system; health from missing members.
// `data_checksums` is false when mounted nodatasum/nodatacow.
stack::StackModel stack_model(const SysfsFilesystem& f, bool data_checksums = true);

}  // namespace fsaudit::btrfs
