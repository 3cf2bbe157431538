// SIGINT (Ctrl-C) and SIGTERM in `remat solve`, `validate` and `sweep`
// (docs/cli.md, "Conventions"): the first asks the work in progress to
// stop (model/stop.h), which it does within about a second, so that an
// isolated solve's process ends and removes its solver's temporary files
// and a sweep's journal keeps exactly the tasks it finished; the command
// then prints one line and exits with 128 + the signal's number (130,
// 143), the status a shell reports for a process the signal killed. The
// same signal again ends the process at once.
#pragma once

#include <functional>
#include <string>

namespace remat::cli {

// Runs a command's `work` (which returns its exit status) under those
// handlers. Work that a stop cut short throws Stopped before it prints or
// writes anything; then this prints "remat <command>: interrupted by
// SIG...", followed by "; <note>" where the work set a note (what it
// kept), and returns 128 + the signal.
int RunStoppable(const std::string& command,
                 const std::function<int(std::string& note)>& work);

}  // namespace remat::cli
