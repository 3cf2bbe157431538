// A solver run as its own program (HiGHS's `highs`, CP-SAT through
// Python): a fresh temporary folder for its files, and the child started,
// waited for and killed past its time limit. A solver runs as a program
// rather than a library where no library with headers is there to build
// against on every machine of the project (highs_process.h,
// moccasin_cpsat.h).
#pragma once

#include <string>
#include <vector>

namespace remat {

// A temporary folder, removed with everything in it however the solve
// ends. path() is empty when it could not be made.
class TempDir {
 public:
  // `prefix`: the folder's name before its random part (remat-highs-...).
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Limits of this many seconds (about 30 years) or more are none.
inline constexpr double kNoLimitSeconds = 1e9;

// How a child ended.
struct ChildRun {
  // Empty when it ran to its end; else why not (it could not start, it
  // crashed, or it ran past its limit and was killed).
  std::string error;
  int exit_status = 0;
  // What it wrote on stdout and stderr.
  std::string log;
};

// Runs `args` (args[0] the executable's path) in `dir` with `env_extra`
// ("NAME=value" entries replacing those of this process's environment),
// its output into dir/log.txt, and waits for it. A child that runs more
// than max(5 s, 10%) past `seconds` is killed, unless `seconds` is
// kNoLimitSeconds or more (no limit: an unbounded Deadline has 1e18 s
// left); it dies with the thread that started it (the isolated solve's
// watchdog ends that thread's process). `what` names it in errors.
ChildRun RunChild(const std::string& what, std::vector<std::string> args,
                  const std::vector<std::string>& env_extra,
                  const std::string& dir, double seconds);

// The last line of `log` that is not empty: why a program failed.
std::string LastLine(const std::string& log);

}  // namespace remat
