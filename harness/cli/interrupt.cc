#include "harness/cli/interrupt.h"

#include <fmt/format.h>
#include <signal.h>
#include <string.h>

#include <atomic>
#include <iostream>

#include "model/errors.h"
#include "model/stop.h"

namespace remat::cli {
namespace {

std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void OnStopSignal(int signal) {
  int none = 0;
  stop_signal.compare_exchange_strong(none, signal);
  RequestStop();
}

// Installs OnStopSignal for `signal`, unless it is ignored: a command
// started in the background by a shell script ignores SIGINT, and stays
// so.
void StopOn(int signal) {
  struct sigaction old = {};
  if (sigaction(signal, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
    return;
  }
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the same signal again ends the process, as before, where
  // the work does not stop. SA_RESTART: reads and writes in progress go on.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(signal, &action, nullptr);
}

}  // namespace

int RunStoppable(const std::string& command,
                 const std::function<int(std::string& note)>& work) {
  StopOn(SIGINT);
  StopOn(SIGTERM);
  std::string note;
  try {
    return work(note);
  } catch (const Stopped&) {
    const int signal = stop_signal.load();
    const char* name = sigabbrev_np(signal);
    std::cerr << Printable(fmt::format("remat {}: interrupted by SIG{}{}{}",
                                       command, name ? name : "?",
                                       note.empty() ? "" : "; ", note),
                           2000)
              << "\n";
    return 128 + signal;
  }
}

}  // namespace remat::cli
