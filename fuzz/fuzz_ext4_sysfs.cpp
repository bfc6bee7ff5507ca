// ext4 superblock error fields as sysfs shows them (/sys/fs/ext4/<dev>/{errors_count,first_error_*,
// last_error_*,...}) and /proc/fs/ext4/<dev>/options, read through the probe's reader: the input
// chooses per file absent / errno / content (fuzz_host_files.hpp), e.g.
// "errors_count=1\n\0first_error_time!5\0options=rw\nshutdown\n".
#include "fuzz/fuzz_host_files.hpp"
#include "fuzz/fuzz_util.hpp"
#include "probes/ext4/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  fuzz::HostFiles host(fuzz::as_text(data, size));
  const std::filesystem::path dir = "/fuzz/sys/fs/ext4/sdb1";
  auto files = ext4::read_ext4_sysfs_files(dir, host.reader(dir));
  fuzz::check_unreadable_reported(host, !files, files ? std::string() : files.error());
  fuzz::HostFiles proc(fuzz::as_text(data, size));
  auto shutdown = ext4::read_ext4_shutdown(dir / "options", proc.reader(dir));
  fuzz::check_unreadable_reported(proc, !shutdown, shutdown ? std::string() : shutdown.error());
  if (!files) return 0;
  auto r = ext4::parse_ext4_sysfs(*files);
  if (!r) return 0;
  if (shutdown) r->shutdown = *shutdown;
  Target t;
  t.name = "/srv";
  fuzz::check_labels(ext4::ext4_metrics(t, "sdb1", *r, /*warning_series=*/true));
  (void)ext4::errno_name(static_cast<std::int64_t>(size) - 3);
  return 0;
}
