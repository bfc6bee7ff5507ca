// The scrub probe's per-target state file (<state_dir>/scrub/<target>.state): whether a scrub fsaudit
// started is still its own, the job's pid and directory, the last run's counts. The daemon acts on it
// (pause, resume, the helper's job), so beyond "no crash": what parse() reads, serialize() writes
// back to text that parses to the same state.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.hpp"
#include "probes/scrub_driver/model.hpp"

namespace {
[[noreturn]] void fail(const char* what, std::string_view text) {
  std::fprintf(stderr, "scrub state invariant broken (%s) for: %.*s\n", what, static_cast<int>(text.size()), text.data());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using fsaudit::scrub::TargetState;
  std::string text(fsaudit::fuzz::as_text(data, size));
  TargetState s = TargetState::parse(text);
  std::string once = s.serialize();
  // Serialising is a fixed point after one round: the second text is the first.
  if (TargetState::parse(once).serialize() != once) fail("round trip", text);
  return 0;
}
