// btrfs sysfs: devinfo/<devid>/error_stats, and profile names from allocation/ directory names.
#include "fuzz/fuzz_util.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/btrfs/stack.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  auto nl = text.find('\n');
  // First line: a profile directory name (any bytes sysfs could hold); the rest: error_stats.
  std::string profile(text.substr(0, nl == std::string_view::npos ? text.size() : nl));
  auto stats = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  btrfs::SysfsFilesystem f;
  f.fsid = profile;
  btrfs::SysfsDevice d;
  d.devid = 1;
  d.name = profile;
  if (auto e = btrfs::parse_error_stats(stats)) d.errors = *e;
  d.missing = size % 2;
  f.devices.push_back(d);
  f.profiles.push_back({"data", profile, size, size / 2});
  (void)btrfs::profile_is_redundant(profile);
  (void)btrfs::stack_model(f);
  Target t;
  t.name = "/srv";
  btrfs::Observation o;
  o.sysfs = std::move(f);
  fuzz::check_labels(btrfs::btrfs_metrics(t, o, /*derived_series=*/true));
  return 0;
}
