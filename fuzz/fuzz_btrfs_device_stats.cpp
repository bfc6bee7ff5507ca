// btrfs device stats (bracketed and -T tabular forms) -> metrics.
#include "fuzz/fuzz_util.hpp"
#include "probes/btrfs/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto r = btrfs::parse_device_stats(fuzz::as_text(data, size));
  if (!r) return 0;
  Target t;
  t.name = "/srv";
  btrfs::Observation o;
  o.device_stats = std::move(*r);
  fuzz::check_labels(btrfs::btrfs_metrics(t, o, /*derived_series=*/true));
  return 0;
}
