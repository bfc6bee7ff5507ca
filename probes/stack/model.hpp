#pragma once
// The stack model: one answer, per mounted filesystem or pool, to "what is this built as and can it
// repair a bad copy right now?". Each filesystem fills it from its own parser output
// (probes/zfs/stack.hpp, probes/btrfs/stack.hpp); the canary's copy check and expectation, the
// refusal of a cycle on an unhealthy stack, the setup audit and the redundancy gauges read it, so
// that no second table of "which layout is redundant" exists.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsaudit::stack {

enum class Health { ok, degraded, resilvering, missing_members, unknown };
std::string_view to_string(Health h);
// The label values, in to_string order (for a state set).
const std::vector<std::string>& health_states();

// What a canary injection on this stack is expected to end in: a bad copy rewritten from a good one,
// a checksum error without repair, or nothing noticed at all.
enum class Expectation { repaired, detected, blind };
std::string_view to_string(Expectation e);

struct StackModel {
  std::string fs;      // btrfs, zfs, xfs, ext4, ...
  std::string name;    // the pool, the btrfs fsid, the target: what the reason names
  std::string layout;  // the filesystem's own word: "mirror", "raidz1", "raid1c3", "dup", "mirror+single"
  // Physical copies of one data block (ZFS: mirror width x the dataset's copies; btrfs: the data
  // profile's). nullopt when the layout mixes (a block may land on either) or is unknown.
  std::optional<std::uint64_t> copies;
  // Parity blocks per stripe (raidz level, btrfs raid5/6): a bad block is rebuilt without a copy.
  std::uint64_t parity = 0;
  // By design, wherever a data block lands it has a second copy or parity (a mirror and a single
  // disk in one pool: false).
  bool repairs = false;
  bool data_checksums = false;
  // Member failures the stack survives when every member is well (a mirror of 3: 2; dup: 0).
  std::optional<int> designed_redundancy;
  // Member failures it survives now, after the members already lost or offline.
  std::optional<int> margin;
  // Bad copies of one block that can still be repaired now (copies=2 on one disk: 1, margin 0).
  std::optional<int> spare_copies;
  Health health = Health::unknown;
  std::string reason;                    // in words, naming the pool and the bad members; "" when ok
  // The members that are down (offline, faulted, removed, unavailable, missing): the name as the
  // filesystem gives it (a pool's vdev path, a btrfs device, "devid 3" when btrfs no longer knows its
  // path) and its state in the filesystem's words.
  struct Member {
    std::string name, state;
    std::string text() const { return name + " " + state; }
  };
  std::vector<Member> bad_members;
  std::vector<std::string> bad_member_texts() const {
    std::vector<std::string> r;
    for (const auto& b : bad_members) r.push_back(b.text());
    return r;
  }

  bool healthy() const { return health == Health::ok; }
  // From the design, not the moment: a degraded mirror is still a stack that repairs, once whole.
  Expectation expectation() const;
};

// A layout word in the one vocabulary the model, the canary config and the setup coverage share:
// btrfs profiles (single, dup, raid1, ...), ZFS vdev layouts (single, mirror, raidz1..3; "raidz" is
// raidz1, "stripe"/"disk"/"file" are single), XFS/ext4 below-the-filesystem words (plain, md-raid1,
// lvm-raid).
std::string normalize_layout(std::string_view fs, std::string_view layout);
// Whether a configured layout word names what the filesystem reports (`actual`, the model's layout).
// Only btrfs and ZFS report their layout; for the others any word matches.
bool layout_matches(std::string_view fs, std::string_view configured, std::string_view actual);

// XFS, ext4 and any filesystem without members it reports on: one copy, no data checksums, nothing
// to lose. `name` is the target.
StackModel plain_model(std::string fs, std::string name);

}  // namespace fsaudit::stack
