// A stop of all the work of this process, asked for by the Python module
// when Ctrl-C arrives during a call that released the GIL, and by `remat
// solve`, `validate` and `sweep` on SIGINT or SIGTERM: while it is
// requested every Deadline has passed (algorithms end as at their time
// limit), child solvers and isolated solves are killed, a sweep starts no
// more tasks, a simulation ends, invalid, and graph readers throw Stopped.
// It holds until ClearStop. Requesting it is async-signal-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>

namespace remat {

namespace internal {
// Lock-free, so that a signal handler may set it.
static_assert(std::atomic<bool>::is_always_lock_free);
inline std::atomic<bool> stop_requested{false};
}  // namespace internal

inline void RequestStop() { internal::stop_requested.store(true); }
inline void ClearStop() { internal::stop_requested.store(false); }
inline bool StopRequested() {
  return internal::stop_requested.load(std::memory_order_relaxed);
}

// Thrown by work that has no partial answer to give when stopped (a
// sweep's results document, a graph read halfway).
class Stopped : public std::runtime_error {
 public:
  Stopped() : std::runtime_error("stopped (interrupted)") {}
};

inline void ThrowIfStopped() {
  if (StopRequested()) throw Stopped();
}

// What the same signal does once it has requested the stop.
enum class SignalAgain {
  // It ends the process (the signal's default action), for work that
  // does not stop.
  kEnds,
  // It requests the stop again: an isolated solve, which Ctrl-C reaches
  // from the terminal and then its parent's SIGTERM, must still end its
  // solver and remove its temporary folder.
  kStops,
};

// Makes SIGINT and SIGTERM request the stop, noting the first such signal
// (StopSignal), unless a signal is ignored: a command started in the
// background by a shell script ignores SIGINT, and stays so. Reads and
// writes in progress go on (SA_RESTART).
void StopOnSignals(SignalAgain again);

// The first signal that requested the stop through StopOnSignals or
// RequestStopFor, 0 if none did.
int StopSignal();

// Requests the stop as `signal` would under StopOnSignals: for a process
// told of a signal that another one received (the ranks of an MPI sweep).
void RequestStopFor(int signal);

// For loops over input (a file's lines, JSON values, a graph's nodes):
// Tick() throws Stopped once a stop is requested, looking for it every
// kEvery calls, so that a large file stops being read within milliseconds
// at no measurable cost.
class StopPoll {
 public:
  void Tick() {
    if ((++ticks_ & (kEvery - 1)) == 0) ThrowIfStopped();
  }

 private:
  static constexpr uint32_t kEvery = uint32_t{1} << 12;
  uint32_t ticks_ = 0;
};

}  // namespace remat
