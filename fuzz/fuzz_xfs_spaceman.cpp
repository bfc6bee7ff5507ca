// xfs_spaceman -c "health -c" output -> metrics.
#include "fuzz/fuzz_util.hpp"
#include "probes/xfs/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto r = xfs::parse_spaceman_health(fuzz::as_text(data, size));
  if (!r) return 0;
  Target t;
  t.name = "/srv";
  xfs::Observation o;
  o.device = "sdb";
  o.health = std::move(*r);
  fuzz::check_labels(xfs::xfs_metrics(t, o, /*diagnostic_series=*/true));
  return 0;
}
