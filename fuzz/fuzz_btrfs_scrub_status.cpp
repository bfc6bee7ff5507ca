// btrfs scrub status/start output, and /var/lib/btrfs/scrub.status.<fsid>, -> metrics.
#include "fuzz/fuzz_util.hpp"
#include "probes/btrfs/btrfs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  Target t;
  t.name = "/srv";
  t.mountpoint = "/srv";
  t.fstype = "btrfs";
  btrfs::Observation o;
  if (auto r = btrfs::parse_scrub_status(text)) o.scrub = std::move(*r);
  if (auto f = btrfs::parse_scrub_status_file(text)) o.scrub_file = f->aggregate();
  (void)btrfs::parse_scrub_duration(text);
  fuzz::check_labels(btrfs::btrfs_metrics(t, o));
  return 0;
}
