// What a running sweep tells its user on stderr: one progress line (tasks
// done / total, point statuses, elapsed time, ETA), rewritten in place on a
// terminal and printed every 10 s otherwise; and a summary table at the end.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <iosfwd>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace remat {

class SweepProgress {
 public:
  // `resumed` tasks (from a journal, with their `resumed_points`) count as
  // done but not in the rate the ETA is estimated from.
  SweepProgress(bool enabled, bool terminal, size_t total, size_t resumed,
                const nlohmann::json& resumed_points);
  ~SweepProgress();
  // One finished task and its points (thread-safe).
  void Add(const nlohmann::json& points);
  // Prints the last line (and ends it on a terminal).
  void Finish();

 private:
  std::string Line();  // with mutex_ held
  void Tick();

  bool enabled_, terminal_;
  size_t total_, already_done_, done_ = 0;
  std::map<std::string, size_t> statuses_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool finished_ = false;
  std::thread ticker_;
};

// Per algorithm run: points, feasible points, median solve time.
void PrintSweepSummary(const nlohmann::json& results, std::ostream& out);

}  // namespace remat
