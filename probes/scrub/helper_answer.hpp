#pragma once
// The scrub verbs' request and answer lines (fsaudit-helper, docs/security.md), built and read
// without touching the host: the helper writes the answer, the unprivileged daemon reads it.
#include <optional>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit::scrub {

// A scrub verb's request: {"verb": VERB, "target": NAME} and, when `job` > 0, "job": "<pid>" (the
// detached job the caller means; the helper refuses one it did not start).
std::string scrub_helper_request(const std::string& verb, const std::string& target, int job);

// A scrub verb's request as the helper reads it: "verb" one of scrub-start|scrub-pause|scrub-cancel,
// "target" a string, "job" (pause, cancel only) a string of digits, a pid in 1..INT32_MAX; nothing else.
struct ScrubHelperRequest {
  std::string verb;
  std::string target;
  int job = 0;  // 0: none named
};
// nullopt when `line` is not a request with a scrub verb (another verb's: not ours to judge); else
// the request or why it is refused.
std::optional<Result<ScrubHelperRequest>> parse_scrub_helper_request(std::string_view line);

// A scrub verb's answer, typed:
//   {"ok": true, "result": TEXT, ["job": {"pid": N, "dir": ABSOLUTE PATH}], ["pause_unsupported": BOOL]}
//   {"ok": false, "refused": WHY, ["kind": KIND], ["pause_unsupported": BOOL]}
// KIND is the refusal's ErrorKind (refused, in_use, not_installed; absent: failed), so that the
// daemon decides on what the helper's driver decided on (a scrub tool not installed: unsupported).
struct ScrubHelperAnswer {
  bool ok = false;
  std::string text;  // result or refusal
  int job_pid = 0;
  std::string job_dir;
  std::optional<bool> pause_unsupported;
  ErrorKind kind = ErrorKind::failed;  // of a refusal
};
std::string scrub_helper_answer(const ScrubHelperAnswer& a);
// Strict: any other key, a mistyped member, a kind not named above (or on a success), a pid <= 0, a
// job directory that is not absolute or has "." / ".." components is an error.
Result<ScrubHelperAnswer> parse_scrub_helper_answer(std::string_view line);

}  // namespace fsaudit::scrub
