// main() of every test program: like gtest_main, and first helper_entry(), so that a test program
// starts its helpers (statfs, latency sampler) the way fsauditd does, by exec of this same program
// with the helper flag. Static initialisers run again in each helper: see started_as_helper().
#include <gtest/gtest.h>

#include "daemon/core/pipe_child.hpp"

int main(int argc, char** argv) {
  fsaudit::helper_entry(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
