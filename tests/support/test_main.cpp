// main() of every test program: like gtest_main, and first helper_entry(), so that a test can have
// its helpers (statfs, latency sampler) started the way fsauditd starts them, by exec of this same
// program (set_helper_executable(std::nullopt)). By default test programs fork them without exec:
// an exec'd copy of setup_lab_test kept an XFS canary's loop device busy (EBUSY on the canary's
// O_EXCL open in SetupLab.RealXfsCanaryCoversAnXfsTarget; cause not found yet, fsauditd's own exec'd
// helpers do not do it: the canary lab tests against the daemon pass).
#include <gtest/gtest.h>

#include "daemon/core/pipe_child.hpp"

int main(int argc, char** argv) {
  fsaudit::helper_entry(argc, argv);
  fsaudit::set_helper_executable("");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
