#pragma once
// Helpers shared by the filesystem probe tests: captured data under tests/fixtures/<fs>, a fake command
// runner, and a ProbeContext over a fixture tree.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/runner/runner.hpp"
#include "tests/support/fake_runner.hpp"

namespace fsaudit::testing {

inline std::filesystem::path probe_fixture_dir() {
  return std::filesystem::path(FSAUDIT_TEST_DATA_DIR);
}

// Text of tests/fixtures/<rel> without its "# source:" line.
inline std::string probe_fixture_text(const std::string& rel) {
  auto r = read_file(probe_fixture_dir() / rel);
  if (!r) throw std::runtime_error("missing test data: " + r.error());
  std::string out;
  for (auto line : lines(*r)) {
    if (line.rfind("# source:", 0) == 0) continue;
    out.append(line);
    out.push_back('\n');
  }
  return out;
}

// The host as seen through a fixture tree under tests/fixtures/<rel> (sys/, proc/, dev/).
inline HostPaths probe_fixture_tree(const std::string& rel) { return HostPaths::under(probe_fixture_dir() / rel); }

// A ProbeContext with its own storage.
struct ContextHolder {
  HostPaths host;
  FakeClock clock;
  ToolPaths tools;
  std::filesystem::path state_dir;
  ProbeContext ctx;
  ContextHolder(HostPaths h, CommandRunner& runner, std::filesystem::path state = "/nonexistent-state")
      : host(std::move(h)),
        state_dir(std::move(state)),
        ctx{host, runner, clock, tools, state_dir, {}, clock.now() + std::chrono::seconds(10)} {}
};

}  // namespace fsaudit::testing
