#include "daemon/config/sections/kernel_log.hpp"

namespace fsaudit::config {

KernelLogConfig parse_kernel_log(Section s) {
  KernelLogConfig c;
  c.source = s.choice("source", c.source, {"auto", "journal", "kmsg"});
  c.max_lines_per_run = s.integer("max_lines_per_run", c.max_lines_per_run, 1, 1'000'000);
  c.state_file = s.string("state_file", c.state_file);
  if (c.state_file.empty() || c.state_file.find('/') != std::string::npos || c.state_file == "." ||
      c.state_file == "..")
    s.fail("state_file", "must be a plain file name inside state_dir, such as kernel_log.state.json");
  c.start_at = s.choice("start_at", c.start_at, {"end", "boot"});
  c.journal_directory = s.string("journal_directory", c.journal_directory);
  if (!c.journal_directory.empty() && c.journal_directory.front() != '/')
    s.fail("journal_directory", "must be an absolute path such as /var/log/journal/<machine-id>");
  s.finish();
  return c;
}

}  // namespace fsaudit::config
