// fsauditd: audits storage continuously and exports what it finds as Prometheus metrics.
#include <cstring>
#include <iostream>
#include <string>

#include "daemon/app/daemon.hpp"
#include "daemon/core/pipe_child.hpp"
#include "fsauditd/probes.hpp"
#include "probes/canary/cli.hpp"
#include "probes/setup/probe.hpp"

namespace {

void usage(std::ostream& o) {
  o << "usage: fsauditd [--config FILE] [--once]\n"
       "       fsauditd --check-config FILE\n"
       "       fsauditd canary <command> ...   (see: fsauditd canary --help)\n"
       "       fsauditd --version\n"
       "\n"
       "  --config FILE        YAML configuration (default /etc/fsaudit/fsaudit.yaml, else built-in defaults)\n"
       "  --check-config FILE  validate FILE and exit 0 (valid) or 1 (the error names file:line:column)\n"
       "  --once               run every probe once, print the metrics to stdout and exit\n";
}

}  // namespace

int main(int argc, char** argv) {
  fsaudit::helper_entry(argc, argv);  // a statfs helper or latency sampler started by this daemon: runs it
  fsaudit::app::Options opts;
  if (argc >= 2 && std::string(argv[1]) == "canary") {
    return fsaudit::canary::canary_cli(argc - 1, argv + 1, fsaudit::setup::suggest_cli);
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need_value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "fsauditd: " << a << " needs " << what << "\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--config" || a == "-c") opts.config_path = need_value("a file");
    else if (a.rfind("--config=", 0) == 0) opts.config_path = a.substr(9);
    else if (a == "--check-config") return fsaudit::app::check_config(need_value("a file"));
    else if (a == "--once") opts.once = true;
    else if (a == "--version") {
      std::cout << "fsauditd " << FSAUDIT_VERSION << "\n";
      return 0;
    } else if (a == "--help" || a == "-h") {
      usage(std::cout);
      return 0;
    } else {
      std::cerr << "fsauditd: unknown argument '" << a << "'\n";
      usage(std::cerr);
      return 2;
    }
  }
  return fsaudit::app::run(opts, fsaudit::fsauditd::extensions());
}
