// main() of every test program: like gtest_main, and first helper_entry(), so helpers (statfs,
// latency sampler) start the way fsauditd starts them, by exec of this same program.
#include <gtest/gtest.h>

#include "daemon/core/pipe_child.hpp"

int main(int argc, char** argv) {
  fsaudit::helper_entry(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
