#include "daemon/dbus/service.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace fsaudit::dbus {
namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Service* self(void* u) { return static_cast<Service*>(u); }

int fail(sd_bus_error* e, const char* name, const std::string& msg) {
  return sd_bus_error_set(e, name, msg.c_str());
}

// Changing calls are for root. The bus policy says so too; checking here as well keeps a bus
// without the policy file (or a mistaken one) from opening them to everyone.
int require_root(sd_bus_message* m, sd_bus_error* e) {
  sd_bus_creds* c = nullptr;
  int r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &c);
  uid_t uid = 1;
  if (r >= 0) r = sd_bus_creds_get_euid(c, &uid);
  sd_bus_creds_unref(c);
  if (r < 0) return fail(e, SD_BUS_ERROR_ACCESS_DENIED, "cannot tell who is calling: " + std::string(std::strerror(-r)));
  if (uid != 0) return fail(e, SD_BUS_ERROR_ACCESS_DENIED, "only root may change what fsauditd does (caller uid " + std::to_string(uid) + ")");
  return 1;
}

using nlohmann::json;

Result<json> status_of(Service* s) {
  auto st = s->hooks_.status();
  if (!st) return st;
  if (!st->is_object() || !(*st)["targets"].is_array() || !(*st)["canaries"].is_array())
    return err("the status document has no targets or canaries list");
  return st;
}

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A problem is a sentence, or an object that carries one (and e.g. a runbook link).
std::string problem_text(const json& p) {
  if (p.is_string()) return p.get<std::string>();
  for (const char* k : {"text", "message", "problem"})
    if (auto t = text_of(p, k); !t.empty()) return t;
  return p.dump();
}

std::string join(const std::vector<std::string>& v) {
  std::string o;
  for (const auto& x : v) o += (o.empty() ? "" : ", ") + x;
  return o.empty() ? "(none)" : o;
}

int m_get_status(sd_bus_message* m, void* u, sd_bus_error* e) {
  auto st = status_of(self(u));
  if (!st) return fail(e, "org.fsaudit.Error.Failed", st.error());
  return sd_bus_reply_method_return(m, "s", st->dump().c_str());
}

int m_list_targets(sd_bus_message* m, void* u, sd_bus_error* e) {
  auto st = status_of(self(u));
  if (!st) return fail(e, "org.fsaudit.Error.Failed", st.error());
  sd_bus_message* reply = nullptr;
  int r = sd_bus_message_new_method_return(m, &reply);
  if (r < 0) return r;
  r = sd_bus_message_open_container(reply, 'a', "(ssss)");
  for (const auto& t : (*st)["targets"]) {
    std::string problems;
    if (t.contains("problems") && t["problems"].is_array())
      for (const auto& p : t["problems"]) problems += (problems.empty() ? "" : "; ") + problem_text(p);
    if (r >= 0)
      r = sd_bus_message_append(reply, "(ssss)", text_of(t, "name").c_str(), text_of(t, "fs").c_str(), text_of(t, "health").c_str(),
                                problems.c_str());
  }
  if (r >= 0) r = sd_bus_message_close_container(reply);
  if (r >= 0) r = sd_bus_send(nullptr, reply, nullptr);
  sd_bus_message_unref(reply);
  return r;
}

int m_get_target(sd_bus_message* m, void* u, sd_bus_error* e) {
  const char* name = nullptr;
  int r = sd_bus_message_read(m, "s", &name);
  if (r < 0) return r;
  auto st = status_of(self(u));
  if (!st) return fail(e, "org.fsaudit.Error.Failed", st.error());
  std::vector<std::string> names;
  for (const auto& t : (*st)["targets"]) {
    names.push_back(text_of(t, "name"));
    if (names.back() != name) continue;
    json j = t;
    j["canary_details"] = json::array();
    if (t.contains("canaries") && t["canaries"].is_array())
      for (const auto& c : t["canaries"])
        for (const auto& cs : (*st)["canaries"])
          if (cs.is_object() && cs.value("name", json()) == c) j["canary_details"].push_back(cs);
    return sd_bus_reply_method_return(m, "s", j.dump().c_str());
  }
  return fail(e, "org.fsaudit.Error.UnknownTarget", "no filesystem named '" + std::string(name) + "'; known: " + join(names));
}

int m_list_probes(sd_bus_message* m, void* u, sd_bus_error*) {
  auto probes = self(u)->hooks_.probes();
  sd_bus_message* reply = nullptr;
  int r = sd_bus_message_new_method_return(m, &reply);
  if (r < 0) return r;
  r = sd_bus_message_open_container(reply, 'a', "(ssxxas)");
  for (const auto& p : probes) {
    if (r >= 0) r = sd_bus_message_open_container(reply, 'r', "ssxxas");
    if (r >= 0) r = sd_bus_message_append(reply, "ssxx", p.name.c_str(), p.scope.c_str(), p.interval_ms, p.timeout_ms);
    if (r >= 0) r = sd_bus_message_open_container(reply, 'a', "s");
    for (const auto& t : p.targets)
      if (r >= 0) r = sd_bus_message_append(reply, "s", t.c_str());
    if (r >= 0) r = sd_bus_message_close_container(reply);
    if (r >= 0) r = sd_bus_message_close_container(reply);
  }
  if (r >= 0) r = sd_bus_message_close_container(reply);
  if (r >= 0) r = sd_bus_send(nullptr, reply, nullptr);
  sd_bus_message_unref(reply);
  return r;
}

int queue(sd_bus_message* m, Service* s, JobRequest req) {
  std::uint64_t id = s->new_job(req);
  req.id = id;
  s->hooks_.submit(req);
  return sd_bus_reply_method_return(m, "t", id);
}

int m_run_probe(sd_bus_message* m, void* u, sd_bus_error* e) {
  if (int r = require_root(m, e); r < 0) return r;
  const char *probe = nullptr, *target = nullptr;
  int r = sd_bus_message_read(m, "ss", &probe, &target);
  if (r < 0) return r;
  auto probes = self(u)->hooks_.probes();
  auto it = std::find_if(probes.begin(), probes.end(), [&](const ProbeInfo& p) { return p.name == probe; });
  if (it == probes.end()) {
    std::vector<std::string> names;
    for (const auto& p : probes) names.push_back(p.name);
    return fail(e, "org.fsaudit.Error.UnknownProbe", "no probe named '" + std::string(probe) + "'; known: " + join(names));
  }
  std::string t = target;
  if (t.empty() && it->targets.size() == 1) t = it->targets.front();
  if (std::find(it->targets.begin(), it->targets.end(), t) == it->targets.end())
    return fail(e, "org.fsaudit.Error.UnknownTarget",
                "probe '" + it->name + "' does not run on '" + t + "'; it runs on: " + join(it->targets));
  return queue(m, self(u), JobRequest{0, "probe", it->name, t, ""});
}

int m_run_canary(sd_bus_message* m, void* u, sd_bus_error* e) {
  if (int r = require_root(m, e); r < 0) return r;
  const char* name = nullptr;
  int r = sd_bus_message_read(m, "s", &name);
  if (r < 0) return r;
  auto probes = self(u)->hooks_.probes();
  std::string probe = "canary:" + std::string(name);
  std::vector<std::string> names;
  for (const auto& p : probes)
    if (p.name.rfind("canary:", 0) == 0) names.push_back(p.name.substr(7));
  auto it = std::find_if(probes.begin(), probes.end(), [&](const ProbeInfo& p) { return p.name == probe; });
  if (it == probes.end())
    return fail(e, "org.fsaudit.Error.UnknownCanary", "no canary named '" + std::string(name) + "'; configured: " + join(names));
  return queue(m, self(u), JobRequest{0, "probe", probe, it->targets.empty() ? "host" : it->targets.front(), ""});
}

int m_init_canary(sd_bus_message* m, void* u, sd_bus_error* e) {
  if (int r = require_root(m, e); r < 0) return r;
  const char* name = nullptr;
  int r = sd_bus_message_read(m, "s", &name);
  if (r < 0) return r;
  std::vector<std::string> names;
  for (const auto& p : self(u)->hooks_.probes())
    if (p.name.rfind("canary:", 0) == 0) names.push_back(p.name.substr(7));
  if (std::find(names.begin(), names.end(), name) == names.end())
    return fail(e, "org.fsaudit.Error.UnknownCanary", "no canary named '" + std::string(name) + "'; configured: " + join(names));
  return queue(m, self(u), JobRequest{0, "canary_init", "", name, ""});
}

int m_scrub(sd_bus_message* m, void* u, sd_bus_error* e) {
  if (int r = require_root(m, e); r < 0) return r;
  const char *action = nullptr, *target = nullptr;
  int r = sd_bus_message_read(m, "ss", &action, &target);
  if (r < 0) return r;
  std::string a = action;
  if (a != "start" && a != "pause" && a != "cancel")
    return fail(e, SD_BUS_ERROR_INVALID_ARGS, "scrub action must be start, pause or cancel, not '" + a + "'");
  // The scrub probe's targets as it last published them (its discovery under the scrub config);
  // the probe checks again when it carries the request out.
  auto found = self(u)->hooks_.scrub_targets();
  if (!found) return fail(e, "org.fsaudit.Error.Failed", found.error());
  const std::vector<std::string>& targets = *found;
  if (std::find(targets.begin(), targets.end(), target) == targets.end())
    return fail(e, "org.fsaudit.Error.UnknownTarget",
                "no scrub target named '" + std::string(target) + "'; scrub targets: " + join(targets) +
                    (targets.empty() ? " (scrub disabled, nothing scrubbable, or its first run has not happened yet)" : ""));
  return queue(m, self(u), JobRequest{0, "scrub", "", target, a});
}

int m_get_job(sd_bus_message* m, void* u, sd_bus_error* e) {
  std::uint64_t id = 0;
  int r = sd_bus_message_read(m, "t", &id);
  if (r < 0) return r;
  auto* s = self(u);
  std::lock_guard l(s->mu_);
  auto it = s->jobs_.find(id);
  if (it == s->jobs_.end()) return fail(e, "org.fsaudit.Error.UnknownJob", "no job " + std::to_string(id) + " (jobs are kept until fsauditd restarts)");
  const auto& j = it->second;
  return sd_bus_reply_method_return(m, "ssss", j.request.kind.c_str(), job_subject(j.request).c_str(), j.state.c_str(), j.result.c_str());
}

int m_list_jobs(sd_bus_message* m, void* u, sd_bus_error*) {
  auto jobs = self(u)->jobs();
  sd_bus_message* reply = nullptr;
  int r = sd_bus_message_new_method_return(m, &reply);
  if (r < 0) return r;
  r = sd_bus_message_open_container(reply, 'a', "(tssssdd)");
  for (const auto& j : jobs)
    if (r >= 0)
      r = sd_bus_message_append(reply, "(tssssdd)", j.request.id, j.request.kind.c_str(), job_subject(j.request).c_str(), j.state.c_str(),
                                j.result.c_str(), j.queued_at, j.finished_at);
  if (r >= 0) r = sd_bus_message_close_container(reply);
  if (r >= 0) r = sd_bus_send(nullptr, reply, nullptr);
  sd_bus_message_unref(reply);
  return r;
}

// No reply here: emit_pending() answers once the main loop has reloaded (Service::reload_finished).
int m_reload(sd_bus_message* m, void* u, sd_bus_error* e) {
  if (int r = require_root(m, e); r < 0) return r;
  auto* s = self(u);
  {
    std::lock_guard l(s->mu_);
    s->pending_reloads_.push_back({sd_bus_message_ref(m), ++s->reload_requests_});
  }
  s->hooks_.reload();
  return 1;
}

int p_version(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply, void* u, sd_bus_error*) {
  return sd_bus_message_append(reply, "s", self(u)->hooks_.version().c_str());
}

const sd_bus_vtable kVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Version", "s", p_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_METHOD_WITH_NAMES("GetStatus", "", , "s", SD_BUS_PARAM(status_json), m_get_status, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("ListTargets", "", , "a(ssss)", SD_BUS_PARAM(targets), m_list_targets, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("GetTarget", "s", SD_BUS_PARAM(name), "s", SD_BUS_PARAM(target_json), m_get_target, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("ListProbes", "", , "a(ssxxas)", SD_BUS_PARAM(probes), m_list_probes, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("GetJob", "t", SD_BUS_PARAM(id), "ssss", SD_BUS_PARAM(kind) SD_BUS_PARAM(subject) SD_BUS_PARAM(state) SD_BUS_PARAM(result), m_get_job, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("RunProbe", "ss", SD_BUS_PARAM(probe) SD_BUS_PARAM(target), "t", SD_BUS_PARAM(job), m_run_probe, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("RunCanary", "s", SD_BUS_PARAM(name), "t", SD_BUS_PARAM(job), m_run_canary, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("InitCanary", "s", SD_BUS_PARAM(name), "t", SD_BUS_PARAM(job), m_init_canary, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Scrub", "ss", SD_BUS_PARAM(action) SD_BUS_PARAM(target), "t", SD_BUS_PARAM(job), m_scrub, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("ListJobs", "", , "a(tssssdd)", SD_BUS_PARAM(jobs), m_list_jobs, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("Reload", "", , "s", SD_BUS_PARAM(message), m_reload, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL_WITH_NAMES("JobFinished", "tss", SD_BUS_PARAM(id) SD_BUS_PARAM(state) SD_BUS_PARAM(result), 0),
    SD_BUS_VTABLE_END};

}  // namespace

std::string job_subject(const JobRequest& r) {
  return r.kind == "probe" ? r.probe + " on " + r.target : r.kind == "scrub" ? r.action + " " + r.target : r.target;
}

std::uint64_t Service::reload_requests() const {
  std::lock_guard l(mu_);
  return reload_requests_;
}

void Service::reload_finished(std::uint64_t up_to, bool ok, const std::string& message) {
  {
    std::lock_guard l(mu_);
    reload_verdicts_.push_back({up_to, ok, message});
  }
  wake();
}

std::uint64_t Service::new_job(JobRequest r) {
  std::lock_guard l(mu_);
  r.id = next_id_++;
  JobInfo j;
  j.request = r;
  j.queued_at = now_unix();
  jobs_[r.id] = j;
  // Keep the last 200 jobs: enough to read a result, bounded however often a script asks.
  while (jobs_.size() > 200) jobs_.erase(jobs_.begin());
  return r.id;
}

void Service::job_started(std::uint64_t id) {
  std::lock_guard l(mu_);
  if (auto it = jobs_.find(id); it != jobs_.end()) it->second.state = "running";
}

void Service::job_finished(std::uint64_t id, bool ok, const std::string& result) {
  std::lock_guard l(mu_);
  if (auto it = jobs_.find(id); it != jobs_.end()) {
    it->second.state = ok ? "done" : "failed";
    it->second.result = result;
    it->second.finished_at = now_unix();
    finished_unsignalled_.push_back(id);
  }
  wake();
}

void Service::wake() {
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

std::vector<JobInfo> Service::jobs() const {
  std::lock_guard l(mu_);
  std::vector<JobInfo> v;
  for (const auto& [id, j] : jobs_) v.push_back(j);
  return v;
}

Result<std::unique_ptr<Service>> Service::start(const std::string& address, Hooks hooks) {
  std::unique_ptr<Service> s(new Service(std::move(hooks)));
  int r = 0;
  if (address == "system") {
    r = sd_bus_open_system(&s->bus_);
  } else {
    r = sd_bus_new(&s->bus_);
    if (r >= 0) r = sd_bus_set_address(s->bus_, address.c_str());
    if (r >= 0) r = sd_bus_set_bus_client(s->bus_, 1);
    if (r >= 0) r = sd_bus_start(s->bus_);
  }
  if (r < 0) return err("cannot connect to the " + (address == "system" ? std::string("system bus") : "bus " + address) + ": " + std::strerror(-r));
  r = sd_bus_add_object_vtable(s->bus_, nullptr, kObjectPath, kInterface, kVtable, s.get());
  if (r < 0) return err(std::string("cannot register the D-Bus object: ") + std::strerror(-r));
  sd_bus_error e = SD_BUS_ERROR_NULL;
  r = sd_bus_request_name(s->bus_, kBusName, 0);
  if (r < 0) {
    std::string why = r == -EEXIST || r == -EALREADY ? "another process owns it (is a second fsauditd running?)"
                      : r == -EACCES || r == -EPERM ? "the bus policy does not allow it (is " + std::string(kBusName) + ".conf installed in /usr/share/dbus-1/system.d?)"
                                                    : std::strerror(-r);
    sd_bus_error_free(&e);
    return err("cannot own the D-Bus name " + std::string(kBusName) + ": " + why);
  }
  s->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_fd_ < 0) return err(std::string("eventfd: ") + std::strerror(errno));
  s->thread_ = std::jthread([p = s.get()](std::stop_token st) { p->loop(st); });
  return s;
}

void Service::emit_pending() {
  std::vector<std::pair<std::uint64_t, JobInfo>> todo;
  std::vector<std::pair<sd_bus_message*, ReloadVerdict>> answers;
  {
    std::lock_guard l(mu_);
    for (auto id : finished_unsignalled_)
      if (auto it = jobs_.find(id); it != jobs_.end()) todo.emplace_back(id, it->second);
    finished_unsignalled_.clear();
    for (const auto& v : reload_verdicts_)
      std::erase_if(pending_reloads_, [&](const PendingReload& p) {
        if (p.request > v.up_to) return false;
        answers.emplace_back(p.call, v);
        return true;
      });
    reload_verdicts_.clear();
  }
  // The signal goes to everyone subscribed whom the bus policy lets receive it: root and group adm,
  // as for GetJob (dbus/org.fsaudit.Daemon1.conf).
  for (const auto& [id, j] : todo)
    sd_bus_emit_signal(bus_, kObjectPath, kInterface, "JobFinished", "tss", id, j.state.c_str(), j.result.c_str());
  for (auto& [call, v] : answers) {
    if (v.ok) sd_bus_reply_method_return(call, "s", v.message.c_str());
    else sd_bus_reply_method_errorf(call, "org.fsaudit.Error.ReloadRejected", "%s", v.message.c_str());
    sd_bus_message_unref(call);
  }
}

void Service::loop(std::stop_token st) {
  while (!st.stop_requested()) {
    int r = sd_bus_process(bus_, nullptr);
    if (r > 0) continue;
    emit_pending();
    if (r < 0) {
      // The bus went away (dbus-daemon restarted): nothing to serve until fsauditd restarts.
      return;
    }
    // Sleeps on the bus and on the wake-up that job_finished() and the destructor write: a short
    // sd_bus_wait() timeout to notice them was five wake-ups a second for nothing.
    int timeout_ms = -1;
    std::uint64_t until = 0;
    if (sd_bus_get_timeout(bus_, &until) >= 0 && until != UINT64_MAX) {
      timespec ts{};
      clock_gettime(CLOCK_MONOTONIC, &ts);
      std::uint64_t now = static_cast<std::uint64_t>(ts.tv_sec) * 1000000 + static_cast<std::uint64_t>(ts.tv_nsec) / 1000;
      timeout_ms = until <= now ? 0 : static_cast<int>(std::min<std::uint64_t>((until - now + 999) / 1000, 60000));
    }
    int events = sd_bus_get_events(bus_);
    pollfd p[2] = {{sd_bus_get_fd(bus_), static_cast<short>(events < 0 ? POLLIN : events), 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, timeout_ms) > 0 && (p[1].revents & POLLIN)) {
      std::uint64_t n = 0;
      [[maybe_unused]] auto got = ::read(wake_fd_, &n, sizeof n);
    }
  }
}

Service::~Service() {
  thread_.request_stop();
  if (wake_fd_ >= 0) wake();
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  // Reloads still waiting get no answer: the caller sees the daemon leave the bus.
  for (auto& p : pending_reloads_) sd_bus_message_unref(p.call);
  if (bus_) {
    sd_bus_flush(bus_);
    sd_bus_close_unref(bus_);
  }
}

}  // namespace fsaudit::dbus
