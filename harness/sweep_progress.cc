#include "harness/sweep_progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <vector>

namespace remat {

namespace {

std::string Clock(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

}  // namespace

SweepProgress::SweepProgress(bool enabled, bool terminal, size_t total,
                             size_t resumed,
                             const nlohmann::json& resumed_points)
    : enabled_(enabled),
      terminal_(terminal),
      total_(total),
      already_done_(resumed),
      done_(resumed),
      start_(std::chrono::steady_clock::now()) {
  if (!enabled_) return;
  for (const auto& point : resumed_points) ++statuses_[point["status"]];
  // A thread of its own, so that the line moves on (elapsed time) while
  // long tasks run and none finishes.
  ticker_ = std::thread([this] { Tick(); });
}

SweepProgress::~SweepProgress() { Finish(); }

void SweepProgress::Add(const nlohmann::json& points) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  for (const auto& point : points) ++statuses_[point["status"]];
}

void SweepProgress::Tick() {
  const auto period = terminal_ ? std::chrono::milliseconds(500)
                                : std::chrono::milliseconds(10000);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return finished_; })) {
    std::cerr << (terminal_ ? "\r" : "") << Line()
              << (terminal_ ? "\033[K" : "\n") << std::flush;
  }
}

void SweepProgress::Finish() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
  }
  wake_.notify_all();
  ticker_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  std::cerr << (terminal_ ? "\r" : "") << Line()
            << (terminal_ ? "\033[K\n" : "\n") << std::flush;
}

std::string SweepProgress::Line() {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  size_t other = 0;
  for (const auto& [status, count] : statuses_) {
    if (status != "feasible" && status != "infeasible" && status != "timeout") {
      other += count;
    }
  }
  const size_t fresh = done_ - already_done_;
  std::string eta = "?";
  if (done_ == total_) {
    eta = Clock(0);
  } else if (fresh > 0) {
    eta = Clock(elapsed / fresh * (total_ - done_));
  }
  return fmt::format(
      "sweep: {}/{} tasks ({} resumed) | points: {} feasible, {} infeasible, "
      "{} timeout, {} other | {} elapsed, ETA {}",
      done_, total_, already_done_, statuses_["feasible"],
      statuses_["infeasible"], statuses_["timeout"], other, Clock(elapsed),
      eta);
}

void PrintSweepSummary(const nlohmann::json& results, std::ostream& out) {
  struct Row {
    size_t points = 0, feasible = 0;
    std::vector<double> seconds;
  };
  std::map<std::string, Row> rows;
  for (const auto& run : results["runs"]) {
    std::string name = run["algorithm"];
    for (const auto& [key, value] : run["params"].items()) {
      name += (name.find(':') == std::string::npos ? ":" : ",") + key + "=" +
              value.get<std::string>();
    }
    Row& row = rows[name];
    for (const auto& point : run["points"]) {
      ++row.points;
      if (point["status"] == "feasible") ++row.feasible;
      row.seconds.push_back(point["solve_seconds"]);
    }
  }
  size_t width = 9;
  for (const auto& [name, row] : rows) width = std::max(width, name.size());
  out << fmt::format("{:<{}}  {:>7}  {:>8}  {:>14}\n", "algorithm", width,
                     "points", "feasible", "median solve s");
  for (auto& [name, row] : rows) {
    std::string median = "-";
    if (!row.seconds.empty()) {
      auto middle = row.seconds.begin() + row.seconds.size() / 2;
      std::nth_element(row.seconds.begin(), middle, row.seconds.end());
      median = fmt::format("{:.4f}", *middle);
    }
    out << fmt::format("{:<{}}  {:>7}  {:>8}  {:>14}\n", name, width,
                       row.points, row.feasible, median);
  }
}

}  // namespace remat
