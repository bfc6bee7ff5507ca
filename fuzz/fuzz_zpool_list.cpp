// zpool list -H (both column sets, and with its own header), zpool get -H and zpool get -j.
#include "fuzz/fuzz_util.hpp"
#include "probes/zfs/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  if (size == 0) return 0;
  auto text = fuzz::as_text(data + 1, size - 1);
  static const char* const columns[] = {"name,size,allocated,free,fragmentation,capacity,dedupratio,health",
                                        "name,size,allocated,free,capacity,health", ""};
  Result<std::vector<zfs::ZfsPoolList>> r = err("");
  switch (data[0] % 5) {
    case 0: case 1: case 2: r = zfs::parse_zpool_list(text, columns[data[0] % 5]); break;
    case 3: r = zfs::parse_zpool_get(text); break;
    default: r = zfs::parse_zpool_get_json(text); break;
  }
  if (!r) return 0;
  std::map<std::string, zfs::ScrubMemory> memory;
  fuzz::check_labels(zfs::build_zfs_metrics({}, *r, zfs::StatusFormat::text, memory, /*full_detail=*/true));
  return 0;
}
