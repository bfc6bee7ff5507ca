#pragma once
// fsauditctl's output, as pure functions of what the daemon returned (JSON), so the text and JSON
// forms are tested against golden files without a daemon.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace fsaudit::ctl {

struct Style {
  bool color = false;
};

// Columns padded to the widest cell (UTF-8 aware); the last column is not padded.
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

std::string render_status(const nlohmann::json& status, const Style& s, double now);
std::string render_targets(const nlohmann::json& status, const Style& s);
std::string render_probes(const nlohmann::json& probes, const Style& s);  // [{name,scope,interval_ms,timeout_ms,targets}]
std::string render_canaries(const nlohmann::json& status, const Style& s, double now);
std::string render_canary(const nlohmann::json& canary, const Style& s, double now);
std::string render_scrubs(const nlohmann::json& status, const Style& s);
// A job (GetJob as JSON: job, kind, subject, state, result); `finished`: the caller waited for it.
std::string render_job(const nlohmann::json& job, bool finished);
// `jobs`: ListJobs as JSON (job, kind, subject, state, result, queued_at, finished_at), oldest first.
std::string render_jobs(const nlohmann::json& jobs, double now);
// Everything about one filesystem, in sentences. `target` is GetTarget's JSON.
std::string render_explain(const nlohmann::json& target, double now);

}  // namespace fsaudit::ctl
