#pragma once
// The stack model of a ZFS pool (probes/stack/model.hpp), from its parsed `zpool status` and the
// properties of the dataset the data lives in. Pure.
#include <string>

#include "daemon/core/result.hpp"
#include "probes/stack/model.hpp"
#include "probes/zfs/properties.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::zfs {

// What the dataset adds: ditto copies of every block (`copies`, 1..3) and whether data is checksummed.
struct DatasetShape {
  int copies = 1;
  bool checksum = true;
};

// Copies are the mirror width times `copies`; member failures survived are the least of the
// data/special/dedup top-level vdevs' (mirror of N: N-1, raidzN: N, a single disk: 0); health from
// the pool state, its members' states and a running resilver. Output cut short: health unknown.
stack::StackModel stack_model(const ZfsPoolStatus& pool, DatasetShape ds = {});

// The properties of the dataset a canary's data lives in, from `zfs get -Hp copies,checksum DATASET`
// (kDatasetShapeProps). A property missing or out of range is an error, not a default.
inline constexpr const char* kDatasetShapeProps = "copies,checksum";
Result<DatasetShape> dataset_shape(const PropertyTable& t, const std::string& dataset);

}  // namespace fsaudit::zfs
