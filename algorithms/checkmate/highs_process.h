// Solving a staged model (checkmate_model.h) with the HiGHS optimizer's
// `highs` executable in a child process: the model is written as MPS and
// the start as a HiGHS solution file (milp_files.h) into a fresh temporary
// folder, `highs` solves it under the time limit, and its solution file
// and log are read back. HiGHS runs as its own program, not as a library,
// because neither Debian bookworm nor the Python package index has a HiGHS
// library with headers that every machine of the project builds against;
// the package index's `highsbox` (pinned in python/requirements.txt) puts
// the executable into the project's Python environment.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"
#include "model/algorithm.h"

namespace remat {

// The `highs` executable: $REMAT_HIGHS when set (an empty value: none), else
// the one of highsbox in the Python environment the build was configured
// with, else `highs` on PATH; nullopt when none of them exists.
std::optional<std::string> FindHighs();

// What the process answered.
struct HighsRun {
  // Empty when HiGHS ran to its end; else why there is no answer (no
  // executable, it could not start, it crashed, or it was killed).
  std::string error;
  // HiGHS's model status ("Optimal", "Infeasible", "Time limit reached").
  std::string model_status;
  // The best solution found (one value per column), if any.
  std::optional<std::vector<double>> x;
  // The proven bound on the objective from its solving report, if given.
  std::optional<double> bound;
};

// Solves `model` from `start` (a point of the model, or none) with
// `threads` threads for at most `seconds`. A process that runs more than
// max(5 s, 10%) past `seconds` is killed; the child dies with the thread
// that started it.
HighsRun RunHighs(const CheckmateModel& model,
                  const std::optional<std::vector<double>>& start,
                  double seconds, int threads);

}  // namespace remat
