// smartctl --json -> report -> metrics.
#include "fuzz/fuzz_util.hpp"
#include "probes/disk/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto r = disk::parse_smartctl_json(fuzz::as_text(data, size));
  if (!r) {
    if (r.error().empty()) std::abort();  // an error always says why
    return 0;
  }
  if (r->state != disk::SmartState::ok && r->reason.empty()) std::abort();
  metrics::Batch b;
  disk::smart_metrics(b, "sda", *r);
  fuzz::check_labels(b);
  return 0;
}
