// fsauditctl: asks a running fsauditd over D-Bus (org.fsaudit.Daemon1) and prints the answer for a
// person (aligned tables, colour on a terminal) or a script (--json).
#include <grp.h>
#include <pwd.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ctl/render.hpp"
#include "daemon/dbus/service.hpp"

namespace {

using nlohmann::json;
using fsaudit::dbus::kBusName;
using fsaudit::dbus::kInterface;
using fsaudit::dbus::kObjectPath;

enum Exit { kOk = 0, kFailed = 1, kUsage = 2, kNotRunning = 3, kDenied = 4, kUnknown = 5, kUnsupported = 6 };

const char* kUsageText =
    "usage: fsauditctl [--json] [--color=auto|always|never] [--bus ADDRESS] COMMAND\n"
    "\n"
    "  status                      overall health and one line per filesystem\n"
    "  targets                     monitored filesystems and what is wrong with them\n"
    "  probes                      probes, their schedules and targets\n"
    "  explain TARGET              everything fsaudit knows about one filesystem, in plain words\n"
    "  canary list                 canaries and their last verdicts\n"
    "  canary status NAME          one canary's last verdict and its story\n"
    "  canary run NAME [--wait]    run a canary cycle now\n"
    "  canary init NAME            sign a new canary (waits for the result)\n"
    "  scrub list                  scrub state, age and findings per filesystem\n"
    "  scrub start|pause|cancel TARGET  start (or resume), pause or cancel a scrub now (waits)\n"
    "  run PROBE [TARGET] [--wait]  run a probe now\n"
    "  jobs                        the jobs asked for since fsauditd started (the last 200)\n"
    "  job ID                      one job: what it is, its state and result\n"
    "  reload                      reload the configuration and say whether it was accepted\n"
    "\n"
    "Exit codes: 0 ok; 1 the request failed; 2 usage; 3 fsauditd is not running or not on the bus;\n"
    "4 permission denied; 5 unknown target, probe, canary or job; 6 not supported.\n"
    "The bus is the system bus unless --bus or FSAUDIT_BUS_ADDRESS names another.\n";

struct Fail {
  int code;
  std::string message;
};

class Client {
 public:
  explicit Client(const std::string& address) {
    int r = 0;
    if (address.empty()) {
      r = sd_bus_open_system(&bus_);
    } else {
      r = sd_bus_new(&bus_);
      if (r >= 0) r = sd_bus_set_address(bus_, address.c_str());
      if (r >= 0) r = sd_bus_set_bus_client(bus_, 1);
      if (r >= 0) r = sd_bus_start(bus_);
    }
    if (r < 0) {
      // The destructor does not run for a constructor that throws: release the half-made bus here.
      bus_ = sd_bus_flush_close_unref(bus_);
      throw Fail{kNotRunning, "cannot connect to the " + (address.empty() ? std::string("system bus") : "bus " + address) + ": " +
                                  std::strerror(-r) + " (is dbus running?)"};
    }
  }
  ~Client() { sd_bus_flush_close_unref(bus_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A reload answers when the daemon has applied (or rejected) the file; a busy main loop may take
  // longer than sd-bus's 25 s default, and a timeout would read as "not running".
  void patient() { sd_bus_set_method_call_timeout(bus_, 120ULL * 1000 * 1000); }

  // Calls METHOD; `append` adds arguments. Returns the reply (caller unrefs).
  template <class... A>
  sd_bus_message* call(const char* method, const char* sig, A... args) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = nullptr;
    int r = sd_bus_call_method(bus_, kBusName, kObjectPath, kInterface, method, &e, &reply, sig, args...);
    if (r < 0) {
      std::string name = e.name ? e.name : "", msg = e.message ? e.message : std::strerror(-r);
      sd_bus_error_free(&e);
      throw classify(name, msg);
    }
    return reply;
  }

  std::string call_string(const char* method, const char* sig = "", const char* arg = nullptr) {
    sd_bus_message* m = arg ? call(method, sig, arg) : call(method, "");
    const char* s = nullptr;
    int r = sd_bus_message_read(m, "s", &s);
    std::string out = r >= 0 && s ? s : "";
    sd_bus_message_unref(m);
    return out;
  }

 private:
  static Fail classify(const std::string& name, const std::string& msg) {
    if (name == SD_BUS_ERROR_SERVICE_UNKNOWN || name == SD_BUS_ERROR_NAME_HAS_NO_OWNER || name == SD_BUS_ERROR_NO_REPLY ||
        name == SD_BUS_ERROR_DISCONNECTED)
      return {kNotRunning, "fsauditd is not running (nobody owns " + std::string(kBusName) +
                               " on the bus); start it with: systemctl start fsauditd"};
    if (name == "System.Error.ENOTCONN" || name == "System.Error.ECONNREFUSED" || name == "System.Error.ECONNRESET" ||
        name == "System.Error.ENOENT")
      return {kNotRunning, "cannot reach the bus: " + msg + " (is dbus running?)"};
    // The message is the bus's policy text or the daemon's; main() says who may do it and how.
    if (name == SD_BUS_ERROR_ACCESS_DENIED) return {kDenied, msg};
    if (name == "org.fsaudit.Error.ReloadRejected") return {kFailed, msg};
    if (name.rfind("org.fsaudit.Error.Unknown", 0) == 0) return {kUnknown, msg};
    if (name == "org.fsaudit.Error.NotSupported") return {kUnsupported, msg};
    if (name == SD_BUS_ERROR_INVALID_ARGS) return {kUsage, msg};
    return {kFailed, msg + (name.empty() ? "" : " (" + name + ")")};
  }
  sd_bus* bus_ = nullptr;
};

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

json probes_json(Client& c) {
  sd_bus_message* m = c.call("ListProbes", "");
  json out = json::array();
  int r = sd_bus_message_enter_container(m, 'a', "(ssxxas)");
  while (r > 0) {
    r = sd_bus_message_enter_container(m, 'r', "ssxxas");
    if (r <= 0) break;
    const char *name = nullptr, *scope = nullptr;
    int64_t interval = 0, timeout = 0;
    sd_bus_message_read(m, "ssxx", &name, &scope, &interval, &timeout);
    json targets = json::array();
    sd_bus_message_enter_container(m, 'a', "s");
    const char* t = nullptr;
    while (sd_bus_message_read(m, "s", &t) > 0) targets.push_back(t);
    sd_bus_message_exit_container(m);
    sd_bus_message_exit_container(m);
    out.push_back({{"name", name}, {"scope", scope}, {"interval_ms", interval}, {"timeout_ms", timeout}, {"targets", targets}});
  }
  sd_bus_message_unref(m);
  return out;
}

json job_json(Client& c, uint64_t id) {
  sd_bus_message* m = c.call("GetJob", "t", id);
  const char *kind = nullptr, *subject = nullptr, *state = nullptr, *result = nullptr;
  sd_bus_message_read(m, "ssss", &kind, &subject, &state, &result);
  json j{{"job", id}, {"kind", kind}, {"subject", subject}, {"state", state}, {"result", result}};
  sd_bus_message_unref(m);
  return j;
}

uint64_t read_job_id(sd_bus_message* m) {
  uint64_t id = 0;
  sd_bus_message_read(m, "t", &id);
  sd_bus_message_unref(m);
  return id;
}

int finish_job(Client& c, uint64_t id, bool wait, bool as_json) {
  json j = job_json(c, id);
  // Canary cycles take minutes; a probe seconds. Poll gently.
  while (wait && (j["state"] == "queued" || j["state"] == "running")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    j = job_json(c, id);
  }
  std::cout << (as_json ? j.dump(2) + "\n" : fsaudit::ctl::render_job(j, wait));
  return j["state"] == "failed" ? kFailed : kOk;
}

json jobs_json(Client& c) {
  sd_bus_message* m = c.call("ListJobs", "");
  json out = json::array();
  int r = sd_bus_message_enter_container(m, 'a', "(tssssdd)");
  uint64_t id = 0;
  const char *kind = nullptr, *subject = nullptr, *state = nullptr, *result = nullptr;
  double queued = 0, finished = 0;
  while (r > 0 && (r = sd_bus_message_read(m, "(tssssdd)", &id, &kind, &subject, &state, &result, &queued, &finished)) > 0)
    out.push_back({{"job", id}, {"kind", kind}, {"subject", subject}, {"state", state}, {"result", result}, {"queued_at", queued},
                   {"finished_at", finished > 0 ? json(finished) : json()}});
  sd_bus_message_unref(m);
  if (r < 0) throw Fail{kFailed, "cannot read the daemon's job list: " + std::string(std::strerror(-r))};
  return out;
}

// The command words, for messages: "canary run", "scrub start", "reload".
std::string command_words(const std::vector<std::string>& args) {
  if (args.empty()) return "";
  bool two = (args[0] == "canary" || args[0] == "scrub") && args.size() > 1;
  return two ? args[0] + " " + args[1] : args[0];
}

// Whether a command changes what the daemon does (root only) or reads (root or group adm), as
// dbus/org.fsaudit.Daemon1.conf says.
bool changes(const std::vector<std::string>& args) {
  std::string w = command_words(args);
  return w == "run" || w == "reload" || w == "canary run" || w == "canary init" || w == "scrub start" || w == "scrub pause" ||
         w == "scrub cancel";
}

// Who may do what, and how to get there: the bus's own refusal names policy rules, not people.
// The bus's text (policy rule counts, interface names) is left out: FSAUDITCTL_DEBUG=1 shows it.
std::string denied(const std::vector<std::string>& args, const std::string& detail) {
  uid_t uid = ::geteuid();
  const passwd* pw = ::getpwuid(uid);
  std::string user = pw ? pw->pw_name : "uid " + std::to_string(uid);
  std::string who = "you are " + user + (pw ? " (uid " + std::to_string(uid) + ")" : "");
  std::string cmd = "fsauditctl " + command_words(args);
  if (std::getenv("FSAUDITCTL_DEBUG")) std::cerr << "fsauditctl: the bus said: " << detail << "\n";
  if (changes(args))
    return "permission denied: `" + cmd + "` changes what fsauditd does, which only root may do; " + who +
           ".\n  Run it as root: sudo " + cmd;
  bool in_adm = false;
  if (const group* adm = ::getgrnam("adm")) {
    gid_t groups[256];
    int n = ::getgroups(256, groups);
    for (int i = 0; i < n; ++i) in_adm |= groups[i] == adm->gr_gid;
    in_adm |= ::getegid() == adm->gr_gid;
  }
  return "permission denied: reading fsauditd's state is for root and the members of group adm; " + who +
         (in_adm ? ", and although group adm lists you, this session does not have it yet (log in again)"
                 : ", not in group adm") +
         ".\n  Run it with sudo (sudo " + cmd + "), or add yourself to the group: sudo usermod -aG adm " + user +
         " (it takes effect at your next login).";
}

int run(std::vector<std::string> args, bool as_json, bool color, const std::string& bus) {
  bool wait = false;
  std::erase_if(args, [&](const std::string& a) { return a == "--wait" ? (wait = true) : false; });
  if (args.empty()) throw Fail{kUsage, "no command given"};
  fsaudit::ctl::Style st{color && !as_json};
  const std::string& cmd = args[0];
  auto need = [&](std::size_t n, const char* what) {
    if (args.size() != n) throw Fail{kUsage, cmd + ": expected " + what};
  };
  std::string words = command_words(args);
  // --wait goes with what makes a job (canary init and scrub requests always wait).
  if (wait && (!changes(args) || words == "reload")) throw Fail{kUsage, "--wait goes with run, canary run|init and scrub start|pause|cancel"};
  // The arguments are checked before the bus is opened: a usage error is a usage error (exit 2)
  // whether or not fsauditd is running.
  std::optional<Client> client;
  auto c = [&]() -> Client& {
    if (!client) client.emplace(bus);
    return *client;
  };
  if (cmd == "status" || cmd == "targets") {
    need(1, "no arguments");
    json s = json::parse(c().call_string("GetStatus"));
    if (as_json) std::cout << (cmd == "status" ? s : s["targets"]).dump(2) << "\n";
    else std::cout << (cmd == "status" ? fsaudit::ctl::render_status(s, st, now()) : fsaudit::ctl::render_targets(s, st));
    return kOk;
  }
  if (cmd == "probes") {
    need(1, "no arguments");
    json p = probes_json(c());
    std::cout << (as_json ? p.dump(2) + "\n" : fsaudit::ctl::render_probes(p, st));
    return kOk;
  }
  if (cmd == "explain") {
    need(2, "TARGET");
    json t = json::parse(c().call_string("GetTarget", "s", args[1].c_str()));
    std::cout << (as_json ? t.dump(2) + "\n" : fsaudit::ctl::render_explain(t, now()));
    return kOk;
  }
  if (cmd == "jobs") {
    need(1, "no arguments");
    json j = jobs_json(c());
    std::cout << (as_json ? j.dump(2) + "\n" : fsaudit::ctl::render_jobs(j, now()));
    return kOk;
  }
  if (cmd == "job") {
    need(2, "ID (a job number, as run and canary run print)");
    const std::string& a = args[1];
    if (a.empty() || a.size() > 19 || a.find_first_not_of("0123456789") != std::string::npos)
      throw Fail{kUsage, "job: '" + a + "' is not a job number"};
    json j = job_json(c(), std::stoull(a));
    bool over = j["state"] == "done" || j["state"] == "failed";
    std::cout << (as_json ? j.dump(2) + "\n" : fsaudit::ctl::render_job(j, over));
    return j["state"] == "failed" ? kFailed : kOk;
  }
  if (cmd == "canary") {
    if (args.size() < 2) throw Fail{kUsage, "canary: expected list, status NAME, run NAME or init NAME"};
    const std::string& sub = args[1];
    if (sub != "list" && sub != "status" && sub != "run" && sub != "init") throw Fail{kUsage, "canary: unknown subcommand '" + sub + "'"};
    if (sub == "list") {
      need(2, "no arguments after list");
      json s = json::parse(c().call_string("GetStatus"));
      std::cout << (as_json ? s["canaries"].dump(2) + "\n" : fsaudit::ctl::render_canaries(s, st, now()));
      return kOk;
    }
    need(3, "NAME");
    if (sub == "status") {
      json s = json::parse(c().call_string("GetStatus"));
      for (const auto& k : s["canaries"])
        if (k["name"] == args[2]) {
          std::cout << (as_json ? k.dump(2) + "\n" : fsaudit::ctl::render_canary(k, st, now()));
          return kOk;
        }
      std::string names;
      for (const auto& k : s["canaries"]) names += (names.empty() ? "" : ", ") + k["name"].get<std::string>();
      throw Fail{kUnknown, "no canary named '" + args[2] + "' has reported; known: " + (names.empty() ? "(none)" : names)};
    }
    if (sub == "run") return finish_job(c(), read_job_id(c().call("RunCanary", "s", args[2].c_str())), wait, as_json);
    return finish_job(c(), read_job_id(c().call("InitCanary", "s", args[2].c_str())), true, as_json);
  }
  if (cmd == "scrub") {
    if (args.size() < 2) throw Fail{kUsage, "scrub: expected list, start TARGET, pause TARGET or cancel TARGET"};
    const std::string& sub = args[1];
    if (sub == "list") {
      need(2, "no arguments after list");
      json s = json::parse(c().call_string("GetStatus"));
      if (as_json) {
        json out = json::array();
        for (const auto& t : s["targets"])
          if (!t["scrub"].is_null()) out.push_back({{"target", t["name"]}, {"fs", t["fs"]}, {"scrub", t["scrub"]}});
        std::cout << out.dump(2) << "\n";
      } else {
        std::cout << fsaudit::ctl::render_scrubs(s, st);
      }
      return kOk;
    }
    if (sub != "start" && sub != "pause" && sub != "cancel") throw Fail{kUsage, "scrub: unknown subcommand '" + sub + "'"};
    need(3, "TARGET");
    // A request takes a command or two: always wait, so the answer says what happened.
    return finish_job(c(), read_job_id(c().call("Scrub", "ss", sub.c_str(), args[2].c_str())), true, as_json);
  }
  if (cmd == "run") {
    if (args.size() < 2 || args.size() > 3) throw Fail{kUsage, "run: expected PROBE [TARGET]"};
    std::string target = args.size() == 3 ? args[2] : "";
    return finish_job(c(), read_job_id(c().call("RunProbe", "ss", args[1].c_str(), target.c_str())), wait, as_json);
  }
  if (cmd == "reload") {
    need(1, "no arguments");
    c().patient();
    // The reply is the daemon's verdict on this reload; a rejected file is an error (exit 1) with its reason.
    std::string message = c().call_string("Reload");
    if (as_json) std::cout << json{{"reload", "accepted"}, {"message", message}}.dump(2) << "\n";
    else std::cout << message << "\n";
    return kOk;
  }
  throw Fail{kUsage, "unknown command '" + cmd + "'"};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool as_json = false;
  std::string color = "auto";
  const char* env_bus = std::getenv("FSAUDIT_BUS_ADDRESS");
  std::string bus = env_bus ? env_bus : "";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") as_json = true;
    else if (a.rfind("--color=", 0) == 0) color = a.substr(8);
    else if (a == "--bus") {
      if (i + 1 == argc) {
        std::cerr << "fsauditctl: --bus needs an ADDRESS\n\n" << kUsageText;
        return kUsage;
      }
      bus = argv[++i];
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsageText;
      return kOk;
    } else if (a == "--version") {
      std::cout << "fsauditctl " << FSAUDIT_VERSION << "\n";
      return kOk;
    } else if (a.rfind("--", 0) == 0 && a != "--wait") {
      std::cerr << "fsauditctl: unknown option '" << a << "'\n\n" << kUsageText;
      return kUsage;
    } else args.push_back(a);
  }
  if (color != "auto" && color != "always" && color != "never") {
    std::cerr << "fsauditctl: --color must be auto, always or never\n";
    return kUsage;
  }
  // NO_COLOR (no-color.org) and a non-terminal turn colour off unless asked for.
  bool use_color = color == "always" || (color == "auto" && isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR"));
  try {
    return run(args, as_json, use_color, bus);
  } catch (const Fail& f) {
    std::cerr << "fsauditctl: " << (f.code == kDenied ? denied(args, f.message) : f.message) << "\n";
    if (f.code == kUsage) std::cerr << "\n" << kUsageText;
    return f.code;
  } catch (const json::exception& e) {
    std::cerr << "fsauditctl: the daemon's answer is not what this fsauditctl understands: " << e.what() << "\n";
    return kFailed;
  }
}
