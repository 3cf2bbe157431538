#include "model/stop.h"

#include <signal.h>

#include <atomic>

namespace remat {
namespace {

std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

}  // namespace

void RequestStopFor(int signal) {
  int none = 0;
  stop_signal.compare_exchange_strong(none, signal);
  RequestStop();
}

void StopOnSignals(SignalAgain again) {
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction old = {};
    if (sigaction(signal, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
      continue;
    }
    struct sigaction action = {};
    action.sa_handler = RequestStopFor;
    sigemptyset(&action.sa_mask);
    // SA_RESETHAND: the handler runs once, and the signal's default action
    // (ending the process) comes back for the next one.
    action.sa_flags =
        SA_RESTART | (again == SignalAgain::kEnds ? SA_RESETHAND : 0);
    sigaction(signal, &action, nullptr);
  }
}

int StopSignal() { return stop_signal.load(); }

}  // namespace remat
