// fsauditctl: asks a running fsauditd over D-Bus (org.fsaudit.Daemon1) and prints the answer for a
// person (aligned tables, colour on a terminal) or a script (--json).
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
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
    "  run PROBE [TARGET] [--wait] run a probe now\n"
    "  reload                      reload the configuration (as systemctl reload fsauditd)\n"
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
    if (name == SD_BUS_ERROR_ACCESS_DENIED)
      return {kDenied, "permission denied: reading needs root or group adm, changing needs root (" + msg + ")"};
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

int run(std::vector<std::string> args, bool as_json, bool color, const std::string& bus) {
  bool wait = false;
  std::erase_if(args, [&](const std::string& a) { return a == "--wait" ? (wait = true) : false; });
  if (args.empty()) throw Fail{kUsage, "no command given"};
  fsaudit::ctl::Style st{color && !as_json};
  const std::string& cmd = args[0];
  auto need = [&](std::size_t n, const char* what) {
    if (args.size() != n) throw Fail{kUsage, cmd + ": expected " + what};
  };
  Client c(bus);
  if (cmd == "status" || cmd == "targets") {
    need(1, "no arguments");
    json s = json::parse(c.call_string("GetStatus"));
    if (as_json) std::cout << (cmd == "status" ? s : s["targets"]).dump(2) << "\n";
    else std::cout << (cmd == "status" ? fsaudit::ctl::render_status(s, st, now()) : fsaudit::ctl::render_targets(s, st));
    return kOk;
  }
  if (cmd == "probes") {
    need(1, "no arguments");
    json p = probes_json(c);
    std::cout << (as_json ? p.dump(2) + "\n" : fsaudit::ctl::render_probes(p, st));
    return kOk;
  }
  if (cmd == "explain") {
    need(2, "TARGET");
    json t = json::parse(c.call_string("GetTarget", "s", args[1].c_str()));
    std::cout << (as_json ? t.dump(2) + "\n" : fsaudit::ctl::render_explain(t, now()));
    return kOk;
  }
  if (cmd == "canary") {
    if (args.size() < 2) throw Fail{kUsage, "canary: expected list, status NAME, run NAME or init NAME"};
    const std::string& sub = args[1];
    if (sub == "list") {
      json s = json::parse(c.call_string("GetStatus"));
      std::cout << (as_json ? s["canaries"].dump(2) + "\n" : fsaudit::ctl::render_canaries(s, st, now()));
      return kOk;
    }
    need(3, "NAME");
    if (sub == "status") {
      json s = json::parse(c.call_string("GetStatus"));
      for (const auto& k : s["canaries"])
        if (k["name"] == args[2]) {
          std::cout << (as_json ? k.dump(2) + "\n" : fsaudit::ctl::render_canary(k, st, now()));
          return kOk;
        }
      std::string names;
      for (const auto& k : s["canaries"]) names += (names.empty() ? "" : ", ") + k["name"].get<std::string>();
      throw Fail{kUnknown, "no canary named '" + args[2] + "' has reported; known: " + (names.empty() ? "(none)" : names)};
    }
    if (sub == "run") return finish_job(c, read_job_id(c.call("RunCanary", "s", args[2].c_str())), wait, as_json);
    if (sub == "init") return finish_job(c, read_job_id(c.call("InitCanary", "s", args[2].c_str())), true, as_json);
    throw Fail{kUsage, "canary: unknown subcommand '" + sub + "'"};
  }
  if (cmd == "scrub") {
    if (args.size() < 2) throw Fail{kUsage, "scrub: expected list, start TARGET, pause TARGET or cancel TARGET"};
    if (args[1] == "list") {
      json s = json::parse(c.call_string("GetStatus"));
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
    need(3, "TARGET");
    // A request takes a command or two: always wait, so the answer says what happened.
    return finish_job(c, read_job_id(c.call("Scrub", "ss", args[1].c_str(), args[2].c_str())), true, as_json);
  }
  if (cmd == "run") {
    if (args.size() < 2 || args.size() > 3) throw Fail{kUsage, "run: expected PROBE [TARGET]"};
    std::string target = args.size() == 3 ? args[2] : "";
    return finish_job(c, read_job_id(c.call("RunProbe", "ss", args[1].c_str(), target.c_str())), wait, as_json);
  }
  if (cmd == "reload") {
    need(1, "no arguments");
    sd_bus_message_unref(c.call("Reload", ""));
    if (as_json) std::cout << json{{"reload", "requested"}}.dump(2) << "\n";
    else std::cout << "reload requested; `fsauditctl status` shows whether the new configuration was accepted\n";
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
    else if (a == "--bus" && i + 1 < argc) bus = argv[++i];
    else if (a == "--help" || a == "-h") {
      std::cout << kUsageText;
      return kOk;
    } else if (a == "--version") {
      std::cout << "fsauditctl " << FSAUDIT_VERSION << "\n";
      return kOk;
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
    std::cerr << "fsauditctl: " << f.message << "\n";
    if (f.code == kUsage) std::cerr << "\n" << kUsageText;
    return f.code;
  } catch (const json::exception& e) {
    std::cerr << "fsauditctl: the daemon's answer is not what this fsauditctl understands: " << e.what() << "\n";
    return kFailed;
  }
}
