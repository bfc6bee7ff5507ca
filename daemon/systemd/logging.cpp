#include "daemon/systemd/logging.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include <cstdlib>
#include <mutex>

namespace fsaudit::logging {
namespace {

bool g_journal = false;
thread_local const Fields* t_fields = nullptr;

int syslog_priority(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LOG_DEBUG;
    case spdlog::level::info: return LOG_INFO;
    case spdlog::level::warn: return LOG_WARNING;
    case spdlog::level::err: return LOG_ERR;
    case spdlog::level::critical: return LOG_CRIT;
    default: return LOG_INFO;
  }
}

std::string field_name(const std::string& k) {
  std::string out = "FSAUDIT_";
  for (char c : k) out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : (c == '-' ? '_' : c));
  return out;
}

class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::vector<std::string> parts;
    parts.push_back("MESSAGE=" + std::string(msg.payload.data(), msg.payload.size()));
    parts.push_back("PRIORITY=" + std::to_string(syslog_priority(msg.level)));
    parts.push_back("SYSLOG_IDENTIFIER=fsauditd");
    if (t_fields)
      for (const auto& [k, v] : *t_fields) parts.push_back(field_name(k) + "=" + v);
    std::vector<iovec> iov;
    for (auto& p : parts) iov.push_back({p.data(), p.size()});
    sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
  }
  void flush_() override {}
};

bool journal_stream_is_stderr() {
  // systemd sets JOURNAL_STREAM=<dev>:<ino> of the stream it connected; trust it only if stderr is it.
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js || !*js) return false;
  struct stat st {};
  if (fstat(2, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

}  // namespace

void init(const std::string& level, bool force_journal) {
  g_journal = force_journal || journal_stream_is_stderr();
  std::shared_ptr<spdlog::logger> logger;
  if (g_journal) logger = std::make_shared<spdlog::logger>("fsauditd", std::make_shared<JournalSink>());
  else logger = std::make_shared<spdlog::logger>("fsauditd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  spdlog::set_default_logger(logger);
  if (!g_journal) spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  set_level(level);
}

bool to_journal() { return g_journal; }

void set_level(const std::string& level) {
  auto l = spdlog::level::from_str(level == "warning" ? "warn" : level);
  spdlog::set_level(l);
}

void log(spdlog::level::level_enum level, const std::string& message, const Fields& fields) {
  if (!g_journal && !fields.empty()) {
    std::string line = message;
    for (const auto& [k, v] : fields) line += " " + k + "=" + v;
    spdlog::log(level, "{}", line);
    return;
  }
  t_fields = &fields;
  spdlog::log(level, "{}", message);
  t_fields = nullptr;
}

}  // namespace fsaudit::logging
