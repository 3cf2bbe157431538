// The shared liveness pass: where frees go, for single and repeated
// computes, with and without live-out values.
#include <gtest/gtest.h>

#include "model/liveness.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using E = Event;

// 0 -> 1 -> 2, and 0 -> 2.
Graph Triangle() {
  return testing::GraphFromNodes(R"([
    {"id": 0, "mem": 1, "cost": 1, "inputs": []},
    {"id": 1, "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 2, "mem": 1, "cost": 1, "inputs": [0, 1]}])");
}

TEST(Liveness, FreesEachValueAfterItsLastRead) {
  std::vector<NodeId> computes = {0, 1, 2};
  EXPECT_EQ(InsertFrees(Triangle(), computes),
            (Schedule{E::Compute(0), E::Compute(1), E::Compute(2), E::Free(0),
                      E::Free(1), E::Free(2)}));
}

TEST(Liveness, AnUnreadInstanceIsFreedRightAfterItsCompute) {
  // The first 1 is never read before 1 is computed again.
  std::vector<NodeId> computes = {0, 1, 1, 2};
  Schedule s = InsertFrees(Triangle(), computes);
  EXPECT_EQ(s, (Schedule{E::Compute(0), E::Compute(1), E::Free(1),
                         E::Compute(1), E::Compute(2), E::Free(0), E::Free(1),
                         E::Free(2)}));
  EXPECT_TRUE(Simulate(Triangle(), s).valid);
}

TEST(Liveness, RecomputedValuesAreFreedBeforeTheirNextCompute) {
  std::vector<NodeId> computes = {0, 1, 0, 2};
  Schedule s = InsertFrees(Triangle(), computes);
  // The first instance of 0 dies after 1 reads it; the second after 2.
  EXPECT_EQ(s, (Schedule{E::Compute(0), E::Compute(1), E::Free(0),
                         E::Compute(0), E::Compute(2), E::Free(0), E::Free(1),
                         E::Free(2)}));
  SimulationResult r = Simulate(Triangle(), s);
  EXPECT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.cost, 4);
}

TEST(Liveness, LiveOutValuesStayLiveAtTheEnd) {
  std::vector<NodeId> computes = {0, 1, 2};
  std::vector<uint8_t> live_out = {0, 0, 1};
  EXPECT_EQ(InsertFrees(Triangle(), computes, live_out),
            (Schedule{E::Compute(0), E::Compute(1), E::Compute(2), E::Free(0),
                      E::Free(1)}));
}

TEST(Liveness, OnlyTheLastInstanceOfALiveOutValueIsKept) {
  std::vector<NodeId> computes = {0, 0, 1, 2};
  std::vector<uint8_t> live_out = {1, 0, 0};
  EXPECT_EQ(InsertFrees(Triangle(), computes, live_out),
            (Schedule{E::Compute(0), E::Free(0), E::Compute(0), E::Compute(1),
                      E::Compute(2), E::Free(1), E::Free(2)}));
}

}  // namespace
}  // namespace remat
