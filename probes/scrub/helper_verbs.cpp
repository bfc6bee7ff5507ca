#include "probes/scrub/helper_verbs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "daemon/core/clock.hpp"
#include "daemon/core/strings.hpp"
#include "probes/scrub/helper_answer.hpp"
#include "probes/scrub/probe.hpp"

namespace fsaudit::scrub {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string refuse(const std::string& why) { return scrub_helper_answer({false, why, 0, "", std::nullopt}); }

// The unprivileged daemon reads the jobs the helper starts (fsaudit-scrub-detach makes them 0755,
// their files 0644): each directory down to <state>/scrub/jobs is 0711, passable by others but not
// listable. All of them are the helper's own (root's); a symlink or a foreign owner is refused.
std::string open_jobs_path(const fs::path& state_dir) {
  std::error_code ec;
  fs::create_directories(state_dir / "scrub" / "jobs", ec);
  for (const auto& d : {state_dir, state_dir / "scrub", state_dir / "scrub" / "jobs"}) {
    int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return "open " + d.string() + ": " + std::strerror(errno);
    struct stat st {};
    std::string why;
    if (::fstat(fd, &st) != 0) why = "fstat " + d.string() + ": " + std::strerror(errno);
    else if (st.st_uid != ::geteuid() || (st.st_mode & 022)) why = d.string() + " is not the helper's alone";
    else if ((st.st_mode & 0777) != 0711 && ::fchmod(fd, 0711) != 0)
      why = "chmod " + d.string() + ": " + std::strerror(errno);
    ::close(fd);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

const std::vector<std::string>& scrub_helper_verbs() {
  static const std::vector<std::string> v = {"scrub-start", "scrub-pause", "scrub-cancel"};
  return v;
}

std::optional<std::string> handle_scrub_helper_request(std::string_view line, const config::Config& own,
                                                       CommandRunner& runner) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("verb") || !j["verb"].is_string()) return std::nullopt;
  const auto verb = j["verb"].get<std::string>();
  const auto& verbs = scrub_helper_verbs();
  if (std::find(verbs.begin(), verbs.end(), verb) == verbs.end()) return std::nullopt;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "verb" && it.key() != "target" && !(it.key() == "job" && verb != "scrub-start"))
      return refuse("unknown key \"" + it.key() + "\" for " + verb +
                    ": a scrub request names a verb, a target and (pause, cancel) the job, nothing else");
  if (!j.contains("target") || !j["target"].is_string()) return refuse("\"target\" (a string) is required");
  int job = 0;
  if (j.contains("job")) {
    auto pid = j["job"].is_string() ? parse_i64(j["job"].get<std::string>()) : std::nullopt;
    if (!pid || *pid <= 0 || *pid > INT32_MAX) return refuse("\"job\" must be a process id (a string of digits)");
    job = static_cast<int>(*pid);
  }
  if (auto why = open_jobs_path(own.state_dir); !why.empty()) return refuse("the helper's job directory: " + why);
  // Everything below comes from the helper's own config: its targets, tools, host paths and state.
  ScrubProbe probe(own.scrub, own.targets);
  probe.exclude_canaries(own.canary);
  ProbeContext ctx{own.host, runner, SystemClock::instance(), own.tools, own.state_dir, {},
                   std::chrono::steady_clock::now() + std::chrono::seconds(60)};
  auto done = probe.carry_out_request(verb.substr(6), j["target"].get<std::string>(), ctx, job);
  ScrubHelperAnswer a{done.ok, done.text, done.ok ? done.job_pid : 0, done.job_dir, done.pause_unsupported};
  if (!a.ok) a.text += " (helper config " + own.source + ")";
  return scrub_helper_answer(a);
}

}  // namespace fsaudit::scrub
