// The sampler process: the wire format between the daemon and it (every cut refused), and real
// samples through a real child (tiny I/O in a temp dir, no privileges): reused, replaced when it dies,
// its answer carrying the same result sample_stack() gives in-process.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/latency/sampler_child.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit;
using namespace fsaudit::latency;
using namespace std::chrono_literals;

namespace {

// Our children named fsaudit-sampler (from /proc: ppid and comm).
std::vector<int> sampler_children() {
  std::vector<int> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    auto name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto stat = read_file(it->path() / "stat");
    auto comm = read_file(it->path() / "comm");
    if (!stat || !comm || trim(*comm) != "fsaudit-sampler") continue;
    auto close = stat->rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat->c_str() + close + 2, "%c %d", &state, &ppid) == 2 && ppid == ::getpid() && state != 'Z')
      out.push_back(std::stoi(name));
  }
  return out;
}

SamplerSettings small() {
  SamplerSettings s;
  s.file_size = 1 << 20;
  s.fill_threshold = 1.0;
  s.samples = 3;
  s.mode = Mode::o_dsync;
  s.direct_reads = true;
  s.helper = "/run/x.sock";
  return s;
}

}  // namespace

TEST(SamplerWire, RequestRoundTripsAndEveryCutIsRefused) {
  auto s = small();
  s.fill_threshold = 0.875;
  auto bytes = encode_request("/mnt/a b", "/mnt/a b/.fsaudit", s, 42, 1500ms);
  auto q = decode_request(bytes);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->mountpoint, "/mnt/a b");
  EXPECT_EQ(q->dir, "/mnt/a b/.fsaudit");
  EXPECT_EQ(q->settings.samples, 3);
  EXPECT_EQ(q->settings.file_size, 1u << 20);
  EXPECT_EQ(q->settings.mode, Mode::o_dsync);
  EXPECT_TRUE(q->settings.direct_reads);
  EXPECT_EQ(q->settings.fill_threshold, 0.875);
  EXPECT_EQ(q->settings.helper, "/run/x.sock");
  EXPECT_EQ(q->seed, 42u);
  EXPECT_EQ(q->budget, std::chrono::nanoseconds(1500ms));
  for (std::size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_request(bytes.substr(0, n))) << n;
  EXPECT_FALSE(decode_request(bytes + "x"));
}

TEST(SamplerWire, ResultRoundTripsAndEveryCutIsRefused) {
  SampleResult r;
  r.state = State::no_space;
  r.reason = "write /x/latency.probe: No space left on device";
  r.fsync_ns = {1, 2, 300'000'000'000ull};
  r.read_ns = {7};
  r.fill_bytes = 4096;
  r.bytes = 8192;
  r.fsyncs = 4;
  r.mode = "io_uring_fsync";
  auto bytes = encode_result(r);
  auto back = decode_result(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, State::no_space);
  EXPECT_EQ(back->reason, r.reason);
  EXPECT_EQ(back->fsync_ns, r.fsync_ns);
  EXPECT_EQ(back->read_ns, r.read_ns);
  EXPECT_EQ(back->fill_bytes, 4096u);
  EXPECT_EQ(back->bytes, 8192u);
  EXPECT_EQ(back->fsyncs, 4u);
  EXPECT_EQ(back->mode, "io_uring_fsync");
  for (std::size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_result(bytes.substr(0, n))) << n;
  // A state number the daemon does not know is refused, not cast.
  auto bad = bytes;
  bad[0] = 100;
  EXPECT_FALSE(decode_result(bad));
}

TEST(SamplerChildren, SamplesInOneReusedChildProcess) {
  fsaudit::testing::TempDir a("fsaudit-sampler-child");
  SamplerChildren children;
  auto s = small();
  s.helper.clear();
  s.direct_reads = false;  // O_DIRECT depends on the filesystem under the temp dir
  auto r = children.sample(a.path(), a.path() / ".fsaudit", s, 1, 10s);
  EXPECT_EQ(r.state, State::ok) << r.reason;
  EXPECT_EQ(r.fsync_ns.size(), 3u);
  EXPECT_EQ(r.fsyncs, 4u);  // the fill's fsync and three samples
  EXPECT_EQ(r.fill_bytes, 1u << 20);
  EXPECT_EQ(r.mode, "o_dsync");
  EXPECT_TRUE(std::filesystem::exists(ProbeFile::path_in(a / ".fsaudit")));
  auto kids = sampler_children();
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_EQ(children.processes(), 1u);
  EXPECT_EQ(children.busy(), 0u);
  auto again = children.sample(a.path(), a.path() / ".fsaudit", s, 2, 10s);
  EXPECT_EQ(again.state, State::ok) << again.reason;
  EXPECT_EQ(again.fill_bytes, 0u);
  EXPECT_EQ(sampler_children(), kids) << "the same child answers the next sample";
  // A budget already spent: the checks run, no sample is taken.
  auto none = children.sample(a.path(), a.path() / ".fsaudit", s, 3, 0s);
  EXPECT_EQ(none.state, State::ok) << none.reason;
  EXPECT_TRUE(none.fsync_ns.empty());
  EXPECT_TRUE(ProbeFile::remove(a / ".fsaudit").ok());
}

TEST(SamplerChildren, FailuresInTheChildComeBackWithTheirReason) {
  SamplerChildren children;
  auto s = small();
  s.helper.clear();
  s.direct_reads = false;
  auto r = children.sample("/nonexistent-fsaudit-mount", "/nonexistent-fsaudit-mount/.fsaudit", s, 1, 10s);
  EXPECT_EQ(r.state, State::error);
  EXPECT_NE(r.reason.find("statvfs /nonexistent-fsaudit-mount: No such file or directory"), std::string::npos)
      << r.reason;
}

TEST(SamplerChildren, AChildThatDiedIsReplacedOnTheNextSample) {
  fsaudit::testing::TempDir a("fsaudit-sampler-child");
  SamplerChildren children;
  auto s = small();
  s.helper.clear();
  s.direct_reads = false;
  s.samples = 1;
  ASSERT_EQ(children.sample(a.path(), a.path() / ".fsaudit", s, 1, 10s).state, State::ok);
  auto kids = sampler_children();
  ASSERT_EQ(kids.size(), 1u);
  ASSERT_EQ(::kill(kids[0], SIGKILL), 0);
  for (int i = 0; i < 100 && !sampler_children().empty(); ++i) ::usleep(20'000);
  auto r = children.sample(a.path(), a.path() / ".fsaudit", s, 2, 10s);
  EXPECT_EQ(r.state, State::ok) << r.reason;
  EXPECT_EQ(r.fsync_ns.size(), 1u);
  auto now = sampler_children();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], kids[0]);
  EXPECT_EQ(children.processes(), 1u) << "the dead child was reaped";
  EXPECT_TRUE(ProbeFile::remove(a / ".fsaudit").ok());
}
