// /proc/self/mountinfo -> mounts -> targets.
#include "daemon/probe/targets.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto r = parse_mountinfo(fuzz::as_text(data, size));
  if (!r) return 0;
  TargetSelection sel;
  sel.explicit_targets = {{"/srv/data", ""}};
  std::vector<std::string> warnings;
  auto targets = select_targets(*r, sel, &warnings);
  metrics::Batch b;
  for (const auto& t : targets)
    b.gauge("fsaudit_target", "x", {{"target", t.name}, {"fstype", t.fstype}, {"source", t.source}}, 1);
  fuzz::check_labels(b);
  for (const auto& m : *r) (void)m.read_only();
  return 0;
}
