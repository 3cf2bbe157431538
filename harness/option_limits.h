// The limits of solve and sweep options, one definition for every front
// door: the command line's validators (harness/cli) and the Python module
// (python/core_run.cc) check the same values with the same rules, so a
// value one of them refuses the other refuses too.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "model/errors.h"

namespace remat {

inline constexpr int kMaxThreads = 1024;
inline constexpr int kMaxBudgetsPerGraph = 100000;

// A time limit in seconds must be a finite number above zero.
inline bool IsTimeLimit(double seconds) {
  return std::isfinite(seconds) && seconds > 0;
}

// Throws InputError("<what>: ...") unless `value` is in [low, high].
inline void CheckRange(long long value, long long low, long long high,
                       const std::string& what) {
  if (value < low || value > high) {
    throw InputError(fmt::format("{}: must be in [{}, {}] (got {})", what, low,
                                 high, value));
  }
}

inline void CheckTimeLimit(double seconds, const std::string& what) {
  if (!IsTimeLimit(seconds)) {
    throw InputError(fmt::format("{}: must be a number of seconds > 0 (got {})",
                                 what, seconds));
  }
}

}  // namespace remat
