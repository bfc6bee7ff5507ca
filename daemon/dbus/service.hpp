#pragma once
// fsauditd on D-Bus: the well-known name org.fsaudit.Daemon1, object /org/fsaudit/Daemon1, interface
// org.fsaudit.Daemon1 (documented in docs/dbus.md). The bus runs on its own thread; read calls answer
// from snapshots (the metrics exposition, the published probe list), changing calls queue a job that
// the daemon's main loop runs, so no daemon state is touched from this thread. It knows nothing of how
// the status is built (the daemon hands it the document), so fsauditctl, which shares its names and
// types, links nothing of the HTTP server.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/core/result.hpp"

typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;

namespace fsaudit::dbus {

inline constexpr const char* kBusName = "org.fsaudit.Daemon1";
inline constexpr const char* kObjectPath = "/org/fsaudit/Daemon1";
inline constexpr const char* kInterface = "org.fsaudit.Daemon1";

struct ProbeInfo {
  std::string name, scope;  // scope: host | per_target
  std::int64_t interval_ms = 0, timeout_ms = 0;
  std::vector<std::string> targets;  // the targets it is scheduled on
};

// A request the daemon's main loop carries out.
struct JobRequest {
  std::uint64_t id = 0;
  std::string kind;     // probe | canary_init | scrub
  std::string probe;    // kind probe: probe name ("zfs", "canary:NAME")
  std::string target;   // probe target, canary name or scrub target
  std::string action;   // scrub: start | pause | cancel
};

struct JobInfo {
  JobRequest request;
  std::string state = "queued";  // queued | running | done | failed
  std::string result;            // a sentence: what happened
  double queued_at = 0, finished_at = 0;
};

// "probe capacity on /srv", "start /srv", a canary's name: what GetJob and ListJobs call the subject.
std::string job_subject(const JobRequest& r);

struct Hooks {
  // The status document (/api/v1/status as JSON, schema fsaudit.status/v1), or why there is none.
  std::function<Result<nlohmann::json>()> status;
  // The scrub probe's targets as it last published them.
  std::function<Result<std::vector<std::string>>()> scrub_targets;
  std::function<std::vector<ProbeInfo>()> probes;  // the current schedule (a snapshot)
  std::function<std::string()> version;
  // Queue `r` for the main loop (which later calls Service::job_started / job_finished).
  std::function<void(const JobRequest&)> submit;
  // Asks the main loop to reload; it answers with Service::reload_finished().
  std::function<void()> reload;
};

class Service {
 public:
  // `address`: "system" for the system bus, else a D-Bus address (unix:path=...).
  static Result<std::unique_ptr<Service>> start(const std::string& address, Hooks hooks);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  void job_started(std::uint64_t id);
  void job_finished(std::uint64_t id, bool ok, const std::string& result);
  std::vector<JobInfo> jobs() const;

  // Reload's verdict: the Reload call's reply waits for it, so a client knows whether the
  // configuration it just wrote was accepted (no race with a status read). The main loop takes
  // reload_requests() before it reads the file and hands it back with the verdict: the calls made
  // up to then get that verdict; later ones wait for the reload they caused.
  std::uint64_t reload_requests() const;
  void reload_finished(std::uint64_t up_to, bool ok, const std::string& message);

 private:
  Service(Hooks hooks) : hooks_(std::move(hooks)) {}
  void loop(std::stop_token st);
  void emit_pending();
  void wake();  // ends the loop's poll: a finished job to signal, or the destructor

 public:  // called from the sd-bus vtable callbacks
  Hooks hooks_;
  mutable std::mutex mu_;
  std::map<std::uint64_t, JobInfo> jobs_;
  std::vector<std::uint64_t> finished_unsignalled_;
  std::uint64_t next_id_ = 1;
  std::uint64_t new_job(JobRequest r);
  struct PendingReload {
    sd_bus_message* call;  // a reference: answered on the bus thread once the verdict is in
    std::uint64_t request;
  };
  struct ReloadVerdict {
    std::uint64_t up_to;
    bool ok;
    std::string message;
  };
  std::uint64_t reload_requests_ = 0;
  std::vector<PendingReload> pending_reloads_;
  std::vector<ReloadVerdict> reload_verdicts_;

 private:
  sd_bus* bus_ = nullptr;
  int wake_fd_ = -1;
  std::jthread thread_;
};

}  // namespace fsaudit::dbus
