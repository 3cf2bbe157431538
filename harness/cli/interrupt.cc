#include "harness/cli/interrupt.h"

#include <fmt/format.h>
#include <string.h>

#include <iostream>

#include "model/errors.h"
#include "model/stop.h"

namespace remat::cli {

int RunStoppable(const std::string& command,
                 const std::function<int(std::string& note)>& work) {
  StopOnSignals(SignalAgain::kEnds);
  std::string note;
  try {
    return work(note);
  } catch (const Stopped&) {
    const int signal = StopSignal();
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
