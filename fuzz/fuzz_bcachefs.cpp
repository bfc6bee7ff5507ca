// bcachefs sysfs files: the parsers on the raw input (io_errors, counters/<name>, state, errors), and
// read_filesystem over the fixture tree's layout with every file's read chosen by the input
// (fuzz_host_files.hpp: "dev-0/io_errors=...\0counters/io_read_retry!13\0errors=(unknown error 4) 7\n").
#include "fuzz/fuzz_host_files.hpp"
#include "fuzz/fuzz_util.hpp"
#include "probes/bcachefs/probe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto text = fuzz::as_text(data, size);
  const std::string uuid = "a9da1e6e-d4e5-4717-a520-408c8af4b084";
  bcachefs::Filesystem f;
  f.uuid = uuid;
  bcachefs::Device d;
  d.dir = "dev-0";
  d.name = std::string(text.substr(0, 40));
  d.state = bcachefs::parse_state(text);
  if (auto e = bcachefs::parse_io_errors(text)) d.io_errors = *e;
  f.devices.push_back(d);
  if (auto c = bcachefs::parse_counter(text)) f.counters[std::string(text.substr(0, 20))] = *c;
  if (auto e = bcachefs::parse_sb_errors(text)) f.sb_errors = *e;
  f.data_replicas = size % 4;
  Target t;
  t.name = "/srv";
  t.fstype = "bcachefs";
  fuzz::check_labels(bcachefs::bcachefs_metrics(t, f));

  // The directory layout is the fixture's; what each file reads as is the input's.
  const auto host = HostPaths::under(FSAUDIT_FIXTURE_DIR "/bcachefs/tree");
  fuzz::HostFiles files(text);
  auto read = bcachefs::read_filesystem(host, uuid, files.reader(host.sys("fs/bcachefs") / uuid));
  if (!read) std::abort();  // the fixture directory is there
  std::string why;
  for (const auto& dev : read->devices) why += dev.problem;
  for (const auto& p : read->problems) why += p;
  fuzz::check_unreadable_reported(files, !why.empty(), why);
  fuzz::check_labels(bcachefs::bcachefs_metrics(t, *read));
  return 0;
}
