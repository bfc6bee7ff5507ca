#include "probes/scrub/helper_verbs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "daemon/core/clock.hpp"
#include "daemon/core/strings.hpp"
#include "probes/scrub/helper_answer.hpp"
#include "probes/scrub/probe.hpp"

namespace fsaudit::scrub {

namespace fs = std::filesystem;

namespace {

std::string refuse(const std::string& why) {
  return scrub_helper_answer({false, why, 0, "", std::nullopt, ErrorKind::failed});
}

// The unprivileged daemon reads the jobs the helper starts (fsaudit-scrub-detach makes them 0750,
// their files 0640, of the daemon's group): each directory down to <state>/scrub/jobs is 0711,
// passable by others but not listable. All of them are the helper's own (root's); a symlink or a foreign owner is refused.
Result<void> open_jobs_path(const fs::path& state_dir) {
  std::error_code ec;
  fs::create_directories(state_dir / "scrub" / "jobs", ec);
  for (const auto& d : {state_dir, state_dir / "scrub", state_dir / "scrub" / "jobs"}) {
    int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return err("open " + d.string() + ": " + std::strerror(errno), ErrorKind::refused);
    struct stat st {};
    std::optional<Error> why;
    if (::fstat(fd, &st) != 0) why = err("fstat " + d.string() + ": " + std::strerror(errno));
    else if (st.st_uid != ::geteuid() || (st.st_mode & 022)) why = err(d.string() + " is not the helper's alone", ErrorKind::refused);
    else if ((st.st_mode & 0777) != 0711 && ::fchmod(fd, 0711) != 0)
      why = err("chmod " + d.string() + ": " + std::strerror(errno));
    ::close(fd);
    if (why) return *why;
  }
  return {};
}

}  // namespace

const std::vector<std::string>& scrub_helper_verbs() {
  static const std::vector<std::string> v = {"scrub-start", "scrub-pause", "scrub-cancel"};
  return v;
}

std::optional<std::string> handle_scrub_helper_request(std::string_view line, const config::Config& own,
                                                       CommandRunner& runner, uid_t peer_uid, gid_t peer_gid) {
  auto req = parse_scrub_helper_request(line);
  if (!req) return std::nullopt;
  if (!*req) return refuse(req->error());
  const auto& [verb, target, job] = **req;
  auto done = carry_out_helper_scrub(verb.substr(6), target, own, runner, peer_uid == 0,
                                     peer_uid == 0 ? std::nullopt : std::optional<gid_t>(peer_gid), job);
  ScrubHelperAnswer a{done.ok, done.text, done.ok ? done.job_pid : 0, done.job_dir, done.pause_unsupported, done.kind};
  if (!a.ok) a.text += " (helper config " + own.source + ")";
  return scrub_helper_answer(a);
}

ScrubProbe::RequestDone carry_out_helper_scrub(const std::string& action, const std::string& target,
                                               const config::Config& own, CommandRunner& runner, bool operator_request,
                                               std::optional<gid_t> job_group, int job) {
  if (auto opened = open_jobs_path(own.state_dir); !opened) {
    ScrubProbe::RequestDone no;
    no.text = "the helper's job directory: " + opened.error();
    no.kind = opened.kind();
    return no;
  }
  // Everything below comes from the helper's own config: its targets, tools, host paths and state.
  ScrubProbe probe(own.scrub, own.targets);
  probe.exclude_canaries(own.canary);
  if (job_group) probe.set_job_group(*job_group);
  ProbeContext ctx{own.host, runner, SystemClock::instance(), own.tools, own.state_dir, {},
                   std::chrono::steady_clock::now() + std::chrono::seconds(60)};
  return probe.carry_out_request(action, target, ctx, operator_request, job);
}

}  // namespace fsaudit::scrub
