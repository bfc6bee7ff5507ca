#pragma once
// `fsauditd canary <command> ...`:
//   init NAME --config FILE           write the signature on the canary, record its member identities
//   run NAME --config FILE            run one cycle now (prints the report as JSON)
//   status NAME --config FILE         print the recorded state and last report
//   scan-bench DEVICE [--queue-depth N] [--chunk SIZE] [--limit SIZE]
//                                     raw O_DIRECT io_uring pattern-scan throughput (read-only)
// main() calls canary_cli(argc - 1, argv + 1) (argv[0] == "canary"); argv[0] "canary" is optional.
#include <filesystem>
#include <string>

#include "daemon/config/config.hpp"
#include "daemon/core/result.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::canary {

int canary_cli(int argc, char** argv);

// What `canary init` does (also used by the lab): all pre-write checks, then the signature file on
// the canary and the identity record in <state_dir>/canary/<name>/identity.json.
Result<void> init_canary(const config::Config& cfg, const std::string& name, CommandRunner& runner);

}  // namespace fsaudit::canary
