#pragma once
// The tests' one fake CommandRunner. It answers from a table keyed by the argv joined with spaces
// ("btrfs scrub status -R /mnt"), else from `handler` (which sees the whole argv), else as the real
// runner answers for a program that is not installed. Every call is recorded, in order.
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/runner/runner.hpp"

namespace fsaudit::testing {

class FakeRunner final : public CommandRunner {
 public:
  // A process that exited `code` with this stdout and stderr.
  static CommandResult exited(int code, std::string out, std::string err = "") {
    CommandResult r;
    r.exited = true;
    r.exit_code = code;
    r.out = std::move(out);
    r.err = std::move(err);
    return r;
  }
  // A program that could not be started.
  static CommandResult not_found(const std::string& program) {
    CommandResult r;
    r.spawn_error = program + ": not found in PATH";
    r.spawn_kind = ErrorKind::not_installed;
    return r;
  }

  void answer(const std::string& cmd, std::string out, int code = 0, std::string err = "") {
    std::lock_guard l(mu_);
    answers[cmd] = exited(code, std::move(out), std::move(err));
  }
  void answer(const std::string& cmd, CommandResult r) {
    std::lock_guard l(mu_);
    answers[cmd] = std::move(r);
  }
  // `cmd` fails to start, as when its package is not installed.
  void missing(const std::string& cmd) {
    std::lock_guard l(mu_);
    answers[cmd] = not_found(cmd.substr(0, cmd.find(' ')));
  }
  // How often exactly `cmd` was run.
  int count(const std::string& cmd) const {
    std::lock_guard l(mu_);
    int n = 0;
    for (const auto& c : calls) n += c == cmd;
    return n;
  }

  CommandResult run(const CommandSpec& spec, std::stop_token = {}) override {
    std::string key;
    for (const auto& a : spec.argv) key += (key.empty() ? "" : " ") + a;
    std::function<CommandResult(const std::vector<std::string>&)> h;
    {
      std::lock_guard l(mu_);
      calls.push_back(key);
      argvs.push_back(spec.argv);
      if (auto it = answers.find(key); it != answers.end()) return it->second;
      h = handler;
    }
    if (h) return h(spec.argv);
    return not_found(spec.argv.empty() ? std::string("(empty argv)") : spec.argv[0]);
  }

  std::map<std::string, CommandResult> answers;
  std::function<CommandResult(const std::vector<std::string>&)> handler;
  std::vector<std::string> calls;               // argv joined with spaces
  std::vector<std::vector<std::string>> argvs;  // the same calls, argv as given

 private:
  mutable std::mutex mu_;
};

}  // namespace fsaudit::testing
