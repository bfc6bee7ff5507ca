#pragma once
// The privileged helper's scrub verbs (fsaudit-helper, docs/security.md), one JSON line each way:
//   {"verb": "scrub-start"|"scrub-pause"|"scrub-cancel", "target": NAME [, "job": "PID"]}
// Nothing else is accepted: no other keys. NAME must be one of the scrub targets the helper's own
// config gives (its scrub section and target selection, discovered on the host as the scrub probe
// does); the filesystem's scrub driver carries the request out, with the helper's own state.
// "job" (pause, cancel) names the detached job the caller means: refused unless it is the one the
// helper started for NAME. The answer (helper_answer.hpp) names the job the target has now; its
// directory, <helper state>/scrub/jobs/<key>, is readable (not writable) by the daemon.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::scrub {

const std::vector<std::string>& scrub_helper_verbs();

// nullopt when `line` is not a request with a scrub verb (another verb's: not ours to answer);
// otherwise the answer line ({"ok": true, "result": "..."} or {"ok": false, "refused": "..."}).
std::optional<std::string> handle_scrub_helper_request(std::string_view line, const config::Config& own,
                                                       CommandRunner& runner);

}  // namespace fsaudit::scrub
