#pragma once
// A CommandRunner that answers from a script (argv joined by spaces -> result) and records calls.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/runner/runner.hpp"

namespace fsaudit::testing {

class FakeRunner final : public CommandRunner {
 public:
  CommandResult run(const CommandSpec& spec, std::stop_token = {}) override {
    std::string k;
    for (const auto& a : spec.argv) k += (k.empty() ? "" : " ") + a;
    std::lock_guard l(mu_);
    calls.push_back(k);
    auto it = script.find(k);
    CommandResult r;
    if (it == script.end()) {
      r.exited = true;
      r.exit_code = 1;
      r.err = "fake runner: no script for \"" + k + "\"";
      return r;
    }
    return it->second;
  }
  void set(const std::string& cmd, std::string out, int code = 0, std::string err = "") {
    CommandResult r;
    r.exited = true;
    r.exit_code = code;
    r.out = std::move(out);
    r.err = std::move(err);
    script[cmd] = r;
  }
  void missing(const std::string& cmd) {
    CommandResult r;
    r.spawn_error = cmd + ": not found (is the package installed and in PATH?)";
    script[cmd] = r;
  }
  int count(const std::string& cmd) const {
    int n = 0;
    for (const auto& c : calls) n += c == cmd;
    return n;
  }
  std::map<std::string, CommandResult> script;
  std::vector<std::string> calls;

 private:
  std::mutex mu_;
};

}  // namespace fsaudit::testing
