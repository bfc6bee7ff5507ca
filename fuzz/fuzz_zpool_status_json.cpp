// zpool status -j (OpenZFS 2.3+) -> report -> metrics.
#include "fuzz/fuzz_util.hpp"
#include "probes/zfs/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto r = zfs::parse_zpool_status_json(fuzz::as_text(data, size), zfs::ScanTimeZone::utc);
  if (!r) return 0;
  std::map<std::string, zfs::ScrubMemory> memory;
  fuzz::check_labels(zfs::build_zfs_metrics(*r, {}, zfs::StatusFormat::json, memory, /*full_detail=*/true));
  return 0;
}
