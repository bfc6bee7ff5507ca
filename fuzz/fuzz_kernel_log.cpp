// Kernel log classifier, line by line, with dmesg/syslog prefixes.
#include "fuzz/fuzz_util.hpp"
#include "probes/kernel_log/classify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  metrics::Batch b;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    auto line = kernel_log::strip_log_prefix(text.substr(pos, end - pos));
    if (auto e = kernel_log::classify(line)) {
      if (!metrics::is_clean_label_value(e->device) || !metrics::is_clean_label_value(e->fs_device)) std::abort();
      b.gauge("fsaudit_kernel_errors", "x", {{"device", e->device}, {"fs", e->fs}, {"kind", std::string(e->kind)}}, 1);
    }
    pos = end + 1;
  }
  fuzz::check_labels(b);
  return 0;
}
