#pragma once
// `fsauditd canary <command> ...`:
//   init NAME --config FILE [--force REASON]
//                                     write the signature on the canary, record its member identities
//   run NAME --config FILE            run one cycle now (prints the report as JSON)
//   status NAME --config FILE         print the recorded state and last report
//   scan-bench DEVICE [--queue-depth N] [--chunk SIZE] [--limit SIZE]
//                                     raw O_DIRECT io_uring pattern-scan throughput (read-only)
// main() calls canary_cli(argc - 1, argv + 1) (argv[0] == "canary"); argv[0] "canary" is optional.
#include <filesystem>
#include <functional>
#include <string>

#include "daemon/config/config.hpp"
#include "daemon/core/result.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::canary {

// `canary suggest` reads the setup audit's stack facts, which sit above the canary (the setup probe
// reads canary verdicts): the composition root (fsauditd/main.cpp) plugs it in; without it the
// command says it is not available in this binary.
using SuggestCommand = std::function<int(const config::Config&, const std::string& target, CommandRunner&)>;
int canary_cli(int argc, char** argv, const SuggestCommand& suggest = {});

// What `canary init` does (also used by the lab): all pre-write checks, then the signature file on
// the canary and the identity record in <state_dir>/canary/<name>/identity.json.
// Every cycle unmounts the canary and corrupts it: init signs only an empty filesystem (nothing but
// lost+found and fsaudit's own files) no larger than kInitSizeCap, unless forced with a reason
// (which is logged to the journal).
inline constexpr std::uint64_t kInitSizeCap = 64ull << 30;
struct InitOptions {
  bool force = false;
  std::string reason;  // required with force
};
Result<void> init_canary(const config::Config& cfg, const std::string& name, CommandRunner& runner,
                         const InitOptions& opts = {});

// Fine when the filesystem at `mountpoint` may become a canary without --force, else refused with why.
Result<void> init_blocker(const std::filesystem::path& mountpoint, std::uint64_t size_cap = kInitSizeCap);

}  // namespace fsaudit::canary
