// fsaudit-canary: the canary commands without the daemon (same as `fsauditd canary ...`).
#include "probes/canary/cli.hpp"

int main(int argc, char** argv) { return fsaudit::canary::canary_cli(argc - 1, argv + 1); }
