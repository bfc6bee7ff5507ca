// bcachefs sysfs files: io_errors, counters/<name>, state, errors.
#include "fuzz/fuzz_util.hpp"
#include "probes/bcachefs/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  bcachefs::Filesystem f;
  f.uuid = "a9da1e6e-d4e5-4717-a520-408c8af4b084";
  bcachefs::Device d;
  d.dir = "dev-0";
  d.name = std::string(text.substr(0, 40));
  d.state = bcachefs::parse_state(text);
  if (auto e = bcachefs::parse_io_errors(text)) d.io_errors = *e;
  f.devices.push_back(d);
  if (auto c = bcachefs::parse_counter(text)) f.counters[std::string(text.substr(0, 20))] = *c;
  f.sb_errors = bcachefs::parse_sb_errors(text);
  f.data_replicas = size % 4;
  Target t;
  t.name = "/srv";
  t.fstype = "bcachefs";
  fuzz::check_labels(bcachefs::bcachefs_metrics(t, f));
  return 0;
}
