// The main() of every test binary: GoogleTest's, after InitIsolation, so
// that algorithms marked `isolate` run in child processes of the test
// binary itself (which also knows the algorithms tests register).
#include <gtest/gtest.h>

#include "harness/isolation.h"

int main(int argc, char** argv) {
  remat::InitIsolation(argc, argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
