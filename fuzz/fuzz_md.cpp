// /proc/mdstat -> metrics.
#include "fuzz/fuzz_util.hpp"
#include "probes/md/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto r = md::parse_mdstat(fuzz::as_text(data, size));
  if (!r) return 0;
  md::Observation o;
  o.mdstat = std::move(*r);
  fuzz::check_labels(md::md_metrics(o));
  return 0;
}
