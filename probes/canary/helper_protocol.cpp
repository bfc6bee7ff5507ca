#include "probes/canary/helper_protocol.hpp"

#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "daemon/core/clock.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/helper_client.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/journal.hpp"
#include "probes/disk/smart_verb.hpp"
#include "probes/scrub/helper_verbs.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& helper_verbs() {
  static const std::vector<std::string> v = {"canary-run", "canary-status"};
  return v;
}

Result<HelperRequest> parse_helper_request(std::string_view line) {
  if (line.size() > kMaxHelperRequest) return err("request longer than " + std::to_string(kMaxHelperRequest) + " bytes");
  json j;
  try {
    j = json::parse(line);
  } catch (const std::exception&) {
    return err("request is not JSON");
  }
  if (!j.is_object()) return err("request is not a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "verb" && it.key() != "canary")
      return err("unknown key \"" + it.key() + "\": a request names a verb and a canary, nothing else");
  if (!j.contains("verb") || !j["verb"].is_string()) return err("\"verb\" (a string) is required");
  if (!j.contains("canary") || !j["canary"].is_string()) return err("\"canary\" (a string) is required");
  HelperRequest r{j["verb"].get<std::string>(), j["canary"].get<std::string>()};
  bool known = false;
  for (const auto& v : helper_verbs()) known = known || v == r.verb;
  if (!known) return err("unknown verb \"" + r.verb + "\"");
  return r;
}

Result<void> check_helper_request(const HelperRequest& req, const config::Config& own) {
  if (!own.canary.find(req.canary))
    return err("\"" + req.canary + "\" is not a canary in the helper's config (" + own.source + ")", ErrorKind::refused);
  return {};
}

namespace {

std::string answer(bool ok, const std::string& what, const json& body = nullptr) {
  json j{{"ok", ok}};
  if (ok) j["result"] = body;
  else j["refused"] = what;
  return j.dump() + "\n";
}

}  // namespace

std::string handle_helper_request(std::string_view line, const config::Config& own, CommandRunner& runner,
                                  uid_t peer_uid, gid_t peer_gid) {
  if (auto scrub = scrub::handle_scrub_helper_request(line, own, runner, peer_uid, peer_gid)) return *scrub;
  if (auto smart = disk::handle_smart_helper_request(line, own, runner)) return *smart;
  auto req = parse_helper_request(line);
  if (!req) return answer(false, req.error());
  if (auto allowed = check_helper_request(*req, own); !allowed) return answer(false, allowed.error());
  if (req->verb == "canary-status") {
    auto s = load_state(own.state_dir, req->canary);
    json j{{"cycles", s.cycles}, {"runs", s.runs}, {"recoveries", s.recoveries}, {"last_run", s.last_run}};
    if (s.last) j["last"] = json::parse(s.last->to_json());
    return answer(true, "", j);
  }
  // canary-run: everything below comes from the helper's own config.
  CycleEnv env(own.host, runner, own.tools, SystemClock::instance(), own.state_dir);
  auto rep = run_cycle(own.canary, req->canary, env);
  if (!rep.busy) {
    record_cycle(own.state_dir, rep);
    journal_cycle(rep);
  }
  auto j = json::parse(rep.to_json());
  j["busy"] = rep.busy;
  return answer(true, "", j);
}

Result<CycleReport> run_cycle_via_helper(const std::string& socket_path, const std::string& canary,
                                         std::chrono::milliseconds timeout) {
  auto reply = helper_exchange(socket_path, json{{"verb", "canary-run"}, {"canary", canary}}.dump(), timeout);
  if (!reply) return err(reply.error());
  try {
    auto j = json::parse(*reply);
    if (!j.value("ok", false)) return err("the fsaudit helper refused: " + j.value("refused", std::string("?")));
    auto rep = CycleReport::from_json(j["result"].dump());
    if (!rep) return err("unreadable report from the fsaudit helper");
    rep->busy = j["result"].value("busy", false);
    return *rep;
  } catch (const std::exception&) {
    return err("unreadable answer from the fsaudit helper");
  }
}

namespace {
int serve_request(const std::string& line, const config::Config& own, const ucred& cred,
                  const std::function<void(const std::string&)>& say);
}  // namespace

int helper_main(int argc, char** argv) {
  std::string config_path = "/etc/fsaudit/fsaudit.yaml";
  std::set<uid_t> allowed = {0};
  std::string state_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (a == "--state-dir" && i + 1 < argc) {
      state_dir = argv[++i];
    } else if (a == "--allow-user" && i + 1 < argc) {
      const char* name = argv[++i];
      struct passwd* pw = ::getpwnam(name);
      if (!pw) {
        std::cerr << "fsaudit-helper: no user " << name << "\n";
        return 2;
      }
      allowed.insert(pw->pw_uid);
    } else {
      std::cerr << "usage: fsaudit-helper [--config FILE] [--state-dir DIR] [--allow-user NAME]...  (serves the connection on fd 0)\n";
      return 2;
    }
  }
  auto say = [](const std::string& s) { (void)!::write(1, s.data(), s.size()); };
  // Who is asking: the kernel's word (SO_PEERCRED), not anything in the request.
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(0, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    std::cerr << "fsaudit-helper: fd 0 is not a connected unix socket (run it from fsaudit-helper.socket)\n";
    return 2;
  }
  if (!allowed.count(cred.uid)) {
    say(answer(false, "uid " + std::to_string(cred.uid) + " may not use the fsaudit helper"));
    sd_journal_send("MESSAGE=fsaudit-helper: refused uid %u (pid %d)", cred.uid, cred.pid, "PRIORITY=4",
                    "SYSLOG_IDENTIFIER=fsaudit-helper", nullptr);
    return 1;
  }
  if (auto trusted = check_trusted_file(config_path); !trusted) {
    say(answer(false, "the helper does not trust its config: " + trusted.error()));
    return 1;
  }
  config::Config own;
  try {
    own = config::load_config_file(config_path);
    if (!state_dir.empty()) own.state_dir = state_dir;  // the helper's own, root-only state
  } catch (const std::exception& e) {
    say(answer(false, std::string("the helper's config does not load: ") + e.what()));
    return 1;
  }
  // Root acts on what its state says (an in-flight marker names a device, an offset, the bytes to put
  // back): a state directory another user can write would let that user choose what root writes.
  if (auto trusted = check_trusted_directory(own.state_dir, 0); !trusted) {
    say(answer(false, "the helper does not trust its state directory " + own.state_dir.string() + ": " + trusted.error()));
    return 1;
  }
  auto line = read_helper_request(0, kHelperRequestDeadline);
  if (!line) {
    say(answer(false, line.error()));
    sd_journal_send("MESSAGE=fsaudit-helper: uid %u pid %d: %s", cred.uid, cred.pid, line.error().c_str(), "PRIORITY=4",
                    "SYSLOG_IDENTIFIER=fsaudit-helper", nullptr);
    return 1;
  }
  return serve_request(*line, own, cred, say);
}

Result<std::string> read_helper_request(int fd, std::chrono::milliseconds deadline) {
  // One deadline for the whole line, not per read: a client that sends a byte every few seconds
  // would otherwise hold a root process (and its slot) as long as it likes.
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::string line;
  char buf[512];
  while (line.find('\n') == std::string::npos) {
    if (line.size() > kMaxHelperRequest)
      return err("request longer than " + std::to_string(kMaxHelperRequest) + " bytes");
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count()) + 1) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0)
      return err("no complete request line within " + std::to_string(deadline.count()) + " ms: cut off, nothing done");
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the client closed: what it sent is the request
    line.append(buf, static_cast<std::size_t>(got));
  }
  if (auto nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
  if (line.size() > kMaxHelperRequest) return err("request longer than " + std::to_string(kMaxHelperRequest) + " bytes");
  return line;
}

namespace {

int serve_request(const std::string& line, const config::Config& own, const ucred& cred,
                  const std::function<void(const std::string&)>& say) {
  ProcessRunner runner;
  auto host_verb = handle_host_verb(line, own, runner, cred.uid, cred.gid);
  std::string out = host_verb ? *host_verb : handle_helper_request(line, own, runner, cred.uid, cred.gid);
  sd_journal_send("MESSAGE=fsaudit-helper: uid %u pid %d asked %s: %s", cred.uid, cred.pid, line.substr(0, 200).c_str(),
                  out.substr(0, 200).c_str(), "PRIORITY=6", "SYSLOG_IDENTIFIER=fsaudit-helper", nullptr);
  say(out);
  return 0;
}

}  // namespace

}  // namespace fsaudit::canary
