// fsaudit-helper's request line (what an unprivileged daemon, or anyone admitted to the socket,
// sends root): the canary and scrub verbs' parsers. Beyond "no crash": a scrub request accepted is
// one the daemon's own builder writes back to the same request, its job a pid in 1..INT32_MAX; an
// answer accepted by the daemon's strict reader has a plain absolute job directory.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "fuzz/fuzz_util.hpp"
#include "probes/canary/helper_request.hpp"
#include "probes/scrub/helper_answer.hpp"

namespace {
[[noreturn]] void fail(std::string_view line) {
  std::fprintf(stderr, "helper request invariant broken for: %.*s\n", static_cast<int>(line.size()), line.data());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  auto line = fuzz::as_text(data, size);
  if (auto r = canary::parse_helper_request(line); r) {
    bool known = false;
    for (const auto& v : canary::helper_verbs()) known = known || v == r->verb;
    if (!known) fail(line);
  }
  if (auto req = scrub::parse_scrub_helper_request(line); req && *req) {
    const auto& r = **req;
    if (r.job < 0 || (r.job > 0 && r.verb == "scrub-start")) fail(line);
    auto again = scrub::parse_scrub_helper_request(scrub::scrub_helper_request(r.verb, r.target, r.job));
    if (!again || !*again || (*again)->verb != r.verb || (*again)->target != r.target || (*again)->job != r.job)
      fail(line);
  }
  if (auto a = scrub::parse_scrub_helper_answer(line); a && a->job_pid != 0) {
    std::filesystem::path dir(a->job_dir);
    if (a->job_pid < 0 || !a->ok || !dir.is_absolute()) fail(line);
    for (const auto& part : dir)
      if (part == "..") fail(line);
  }
  return 0;
}
