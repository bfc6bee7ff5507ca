// btrfs scrub status/start output, and /var/lib/btrfs/scrub.status.<fsid>, -> the scrub driver's
// observation (the scrub probe's metrics come from it).
#include "fuzz/fuzz_util.hpp"
#include "probes/btrfs/scrub_driver.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  if (auto r = btrfs::parse_scrub_status(text)) {
    // Printed device paths become `device` label values of fsaudit_scrub_last_device_errors.
    metrics::Batch b;
    for (const auto& [device, e] : btrfs::observation_from_btrfs(*r).error_detail.devices)
      b.gauge("fsaudit_scrub_last_device_errors", "fuzz", {{"target", "/srv"}, {"device", device}}, 0);
    fuzz::check_labels(b);
  }
  if (auto f = btrfs::parse_scrub_status_file(text)) (void)btrfs::observation_from_btrfs_file(*f, "");
  (void)btrfs::parse_scrub_duration(text);
  return 0;
}
