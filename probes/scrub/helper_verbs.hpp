#pragma once
// The privileged helper's scrub verbs (fsaudit-helper, docs/security.md), one JSON line each way:
//   {"verb": "scrub-start"|"scrub-pause"|"scrub-cancel", "target": NAME [, "job": "PID"]}
// Nothing else is accepted: no other keys. NAME must be one of the scrub targets the helper's own
// config gives (its scrub section and target selection, discovered on the host as the scrub probe
// does); the filesystem's scrub driver carries the request out, with the helper's own state.
// "job" (pause, cancel) names the detached job the caller means: refused unless it is the one the
// helper started for NAME, and required when the helper recorded one. The answer (helper_answer.hpp) names the job the target has now; its
// directory, <helper state>/scrub/jobs/<key>, is readable (not writable) by the daemon.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/runner/runner.hpp"
#include "probes/scrub/probe.hpp"

namespace fsaudit::scrub {

const std::vector<std::string>& scrub_helper_verbs();

// nullopt when `line` is not a request with a scrub verb (another verb's: not ours to answer);
// otherwise the answer line ({"ok": true, "result": "..."} or {"ok": false, "refused": "..."}).
// `peer_uid`, `peer_gid` (SO_PEERCRED): root is an operator; anybody else (the unprivileged daemon)
// gets the scrub policy of the helper's own config (request_allowed, planner.hpp), must name the job
// it pauses or cancels, and may read (only its group may) the jobs started for it.
std::optional<std::string> handle_scrub_helper_request(std::string_view line, const config::Config& own,
                                                       CommandRunner& runner, uid_t peer_uid, gid_t peer_gid);

// What the scrub verbs carry out (and md-sync-action, the older md-only form): `action` (start,
// pause, cancel) on `target`, found and checked by the helper's own config and state.
ScrubProbe::RequestDone carry_out_helper_scrub(const std::string& action, const std::string& target,
                                               const config::Config& own, CommandRunner& runner, bool operator_request,
                                               std::optional<gid_t> job_group, int job = 0);

}  // namespace fsaudit::scrub
