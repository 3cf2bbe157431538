// Sets of nodes remembered by their fingerprints, and the restarts that
// share them: the searches that remember dead ends (reach_search's sets
// of values live together, order_search's sets of values computed) keep a
// 128-bit fingerprint of each set, the exclusive or of its members' random
// keys (Zobrist hashing), not its members: sets of a few hundred values
// would take a kilobyte each, a search's reach is the number of sets it
// can remember, and a set's fingerprint follows from its parent's by the
// members that change. Two different sets share a fingerprint with a
// probability of 2^-128; among the 10^8 sets a search remembers at most,
// the chance that any two collide (and a set is taken for a dead end it
// is not) is below 10^-22.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_set>
#include <vector>

#include "model/graph.h"

namespace remat {

struct Fingerprint {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const Fingerprint&) const = default;
  Fingerprint& operator^=(const Fingerprint& other) {
    high ^= other.high;
    low ^= other.low;
    return *this;
  }
};

// splitmix64: a well-mixed sequence of 64-bit values from a counter.
inline uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Each node's random key, the same in every search.
inline std::vector<Fingerprint> FingerprintKeys(const Graph& graph) {
  std::vector<Fingerprint> keys(graph.num_nodes());
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    const auto id = static_cast<uint64_t>(v);
    keys[v] = {.high = SplitMix(2 * id), .low = SplitMix(2 * id + 1)};
  }
  return keys;
}

// The sets a search found no way on from, within a memory limit.
class DeadEnds {
 public:
  explicit DeadEnds(int64_t max_bytes) : max_bytes_(max_bytes) {}

  bool contains(const Fingerprint& print) const {
    return prints_.contains(print);
  }
  // False, remembering nothing, once the limit is reached.
  bool Insert(const Fingerprint& print) {
    if (bytes_ + kBytesPerSet > max_bytes_) return false;
    bytes_ += kBytesPerSet;
    prints_.insert(print);
    return true;
  }

 private:
  struct Hash {
    size_t operator()(const Fingerprint& print) const { return print.low; }
  };
  // What one remembered set takes in the hash set: the fingerprint, the
  // node's link and cached hash, the allocator's header and a bucket.
  static constexpr int64_t kBytesPerSet = 64;

  const int64_t max_bytes_;
  int64_t bytes_ = 0;
  std::unordered_set<Fingerprint, Hash> prints_;
};

// When the runs of a restarting search stop (randomized restarts: Gomes,
// Selman and Kautz, "Boosting Combinatorial Search Through
// Randomization", AAAI 1998). A dead end is one in every order, so all
// runs share the sets remembered, and a run that ends without an answer
// is still a proof. The first run may search `first_run_states` sets (0:
// one run, no cutoff), each later run kGrowth times as many as the last.
class Restarts {
 public:
  explicit Restarts(int64_t first_run_states)
      : run_states_(static_cast<double>(first_run_states)),
        one_run_(first_run_states == 0) {}

  // The count of sets searched at which the run that starts now, after
  // `states` sets, stops.
  int64_t Cutoff(int64_t states) const {
    return one_run_ ? std::numeric_limits<int64_t>::max()
                    : states + static_cast<int64_t>(run_states_);
  }
  void Restart() {
    ++count_;
    run_states_ *= kGrowth;
  }
  // Restarts so far: the run that starts now is run count().
  int64_t count() const { return count_; }

 private:
  static constexpr double kGrowth = 1.5;
  double run_states_;
  const bool one_run_;
  int64_t count_ = 0;
};

}  // namespace remat
