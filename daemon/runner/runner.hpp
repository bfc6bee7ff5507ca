#pragma once
// The one way fsaudit runs external commands (zpool, btrfs, xfs_spaceman, ...): argv only, never a
// shell; its own process group, killed as a whole at the deadline; bounded output; stderr kept for
// the error message; never two copies with the same key at once.
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit {

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is a path or a name looked up in PATH
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::size_t max_output = 8 << 20;  // bytes kept per stream; the rest is drained and dropped
  // Commands with the same non-empty key never run at once: a second call fails fast instead of
  // piling up behind a hung first one. Default: the whole argv.
  std::optional<std::string> key;
  std::optional<std::string> stdin_data;
  std::map<std::string, std::string> env;  // added to a minimal environment (PATH, LC_ALL=C)
};

struct CommandResult {
  int exit_code = -1;        // valid when exited
  int term_signal = 0;       // non-zero when killed by a signal
  bool exited = false;
  bool timed_out = false;
  bool busy = false;         // refused: the same key was already running
  bool truncated = false;    // more output than max_output: what is kept is cut short
  std::string spawn_error;   // e.g. "zpool: not found in PATH"
  ErrorKind spawn_kind = ErrorKind::failed;  // spawn_error's: not_installed when the program is not there
  std::string out;
  std::string err;
  double duration_seconds = 0;

  // A truncated output is not a success: a parser given the kept part would read a cut table as
  // the whole truth. Callers that can use partial output look at `out` themselves.
  bool ok() const { return exited && exit_code == 0 && !truncated; }
  // One line for logs and metric labels: "timed out after 5s", "exit 1: cannot open 'tank': no such pool".
  std::string describe() const;
};

// A failed command as an error: `context` and its description, with the kind of a failure to start it
// (not_installed: the program is not there).
inline Error err_in(const std::string& context, const CommandResult& failed) {
  return Error{context + failed.describe(), failed.spawn_kind};
}

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CommandResult run(const CommandSpec& spec, std::stop_token stop = {}) = 0;
};

class ProcessRunner final : public CommandRunner {
 public:
  CommandResult run(const CommandSpec& spec, std::stop_token stop = {}) override;

 private:
  std::mutex mu_;
  std::set<std::string> running_;
};

// The PATH commands run with and are looked up in: the process's own (the system default where it has
// none) plus /usr/sbin:/sbin, where storage tools live and a service's PATH may lack.
std::string tool_search_path();
// What `name` runs: itself when it is a path and executable, else the first executable of that name
// in tool_search_path(); "" when there is none.
std::string find_tool(const std::string& name);

}  // namespace fsaudit
