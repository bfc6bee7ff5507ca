// Kernel log classifier, line by line, with dmesg/syslog prefixes; and the whole input as one
// /dev/kmsg record (what one read(2) returns), whose message goes through the classifier too.
#include "fuzz/fuzz_util.hpp"
#include "probes/kernel_log/classify.hpp"
#include "probes/kernel_log/kmsg_record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  metrics::Batch b;
  if (auto rec = kernel_log::parse_kmsg_record(text)) {
    if (rec->level < 0 || rec->level > 7 || rec->message.size() > text.size()) std::abort();
    if (auto e = kernel_log::classify(rec->message))
      b.gauge("fsaudit_kernel_errors", "x", {{"device", e->device}, {"fs", e->fs}, {"kind", std::string(e->kind)}}, 1);
  }
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
