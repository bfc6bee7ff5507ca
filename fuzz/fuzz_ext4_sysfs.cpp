// ext4 superblock error fields as sysfs shows them (/sys/fs/ext4/<dev>/{errors_count,first_error_*,
// last_error_*,...}). Input: "name=value" records separated by NUL bytes.
#include "fuzz/fuzz_util.hpp"
#include "probes/ext4/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  std::map<std::string, std::string> files;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('\0', pos);
    if (end == std::string_view::npos) end = text.size();
    auto rec = text.substr(pos, end - pos);
    auto eq = rec.find('=');
    if (eq != std::string_view::npos) files[std::string(rec.substr(0, eq))] = std::string(rec.substr(eq + 1));
    pos = end + 1;
  }
  auto r = ext4::parse_ext4_sysfs(files);
  if (!r) return 0;
  Target t;
  t.name = "/srv";
  fuzz::check_labels(ext4::ext4_metrics(t, "sdb1", *r));
  (void)ext4::errno_name(static_cast<std::int64_t>(size) - 3);
  return 0;
}
