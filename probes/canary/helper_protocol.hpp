#pragma once
// The privileged helper's vocabulary (fsaudit-helper, see docs/security.md). One request per
// connection, one JSON line each way:
//   {"verb": "canary-run", "canary": "NAME"}     one full cycle (recovery first), answers the report
//   {"verb": "canary-status", "canary": "NAME"}  the canary's recorded state
//   {"verb": "scrub-start|scrub-pause|scrub-cancel", "target": "NAME" [, "job": "PID"]}  see probes/scrub/helper_verbs.hpp
// and the host verbs of handle_host_verb() below, each with its own typed arguments.
// Nothing else is accepted: no other keys, no paths, no devices, no tools. Every name is looked up
// in the config the helper reads itself; whatever the caller believes about devices or mount
// points never reaches the helper.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/trust.hpp"
#include "daemon/core/result.hpp"
#include "probes/canary/helper_request.hpp"
#include "daemon/runner/runner.hpp"
#include "probes/canary/cycle.hpp"

namespace fsaudit::canary {

inline constexpr std::size_t kMaxHelperRequest = 1024;
// The whole request line must arrive within this, however the client paces it.
inline constexpr std::chrono::milliseconds kHelperRequestDeadline{5000};
inline constexpr const char* kDefaultHelperSocket = "/run/fsaudit/helper.sock";


// Fine when `own` (the helper's config) has this canary, else refused.
Result<void> check_helper_request(const HelperRequest& req, const config::Config& own);

// Handles one request line for a peer already admitted; answers one JSON line (with "\n").
// `peer_uid`, `peer_gid` (SO_PEERCRED): root is an operator; the default is nobody's: not an operator.
std::string handle_helper_request(std::string_view line, const config::Config& own, CommandRunner& runner,
                                  uid_t peer_uid = static_cast<uid_t>(-1), gid_t peer_gid = static_cast<gid_t>(-1));

// The host verbs (helper_verbs_host.cpp): counters-clear, btrfs-device-stats, btrfs-scrub-status,
// md-sync-action, latency-file-create. nullopt when `line` is not one of them; `peer_*` (SO_PEERCRED) own the
// files latency-file-create makes.
std::optional<std::string> handle_host_verb(std::string_view line, const config::Config& own, CommandRunner& runner,
                                            uid_t peer_uid, gid_t peer_gid);

// Client side (the unprivileged daemon): one cycle through the helper's socket.
Result<CycleReport> run_cycle_via_helper(const std::string& socket_path, const std::string& canary,
                                         std::chrono::milliseconds timeout);

// Reads one request line from `fd`: the line (without "\n"; what came before EOF when the client
// closed), or why not: longer than kMaxHelperRequest, or not complete within `deadline` in total.
Result<std::string> read_helper_request(int fd, std::chrono::milliseconds deadline);

// Helper entry point: serves the accepted connection on fd 0 (systemd Accept=yes, StandardInput=socket).
int helper_main(int argc, char** argv);

}  // namespace fsaudit::canary
