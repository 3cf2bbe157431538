// A sweep over MPI ranks (`mpirun -n N remat sweep ...`, Open MPI). Every
// rank plans the sweep itself (loads or generates the graphs; their content
// hashes are checked against rank 0's); rank 0 hands out tasks one at a
// time, in the plan's order (most expensive expected first), to whichever
// rank has a free thread, runs tasks on its own threads too, and receives
// every finished task's points. Ranks send each other a heartbeat every
// second. A worker rank silent for longer than REMAT_MPI_RANK_TIMEOUT
// seconds (default 60) is taken for dead: its tasks are handed out once
// more, and a task whose rank dies twice becomes an `error` point. A
// worker that hears nothing from rank 0 for REMAT_MPI_RANK_TIMEOUT seconds
// (default 10) ends with one line and exit status 2: rank 0 alone writes
// the journal and results, so the sweep resumes from its journal. The
// heartbeats go on while the ranks plan (Together, CheckSamePlan), so a
// rank 0 that dies then ends the workers the same way. A stop (model/stop.h)
// on any rank, by SIGINT or SIGTERM, is passed to every other: rank 0 hands
// out no more tasks and keeps none that ends after it, the tasks in hand end
// as at their time limit, and Run returns once their results are in.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/sweep.h"

namespace remat {

// Whether this process is one of several ranks started by mpirun (or
// srun).
bool LaunchedAsRanks();

class MpiRanks {
 public:
  // MPI, initialized, when LaunchedAsRanks(); null otherwise. Three
  // definitions, one in each program: Open MPI's (sweep_mpi.cc: remat-mpi,
  // the tests, the Python module); `remat`'s, which becomes remat-mpi
  // (sweep_mpi_exec.cc); and one for a build without MPI, InputError when
  // launched as ranks (sweep_mpi_absent.cc).
  static std::unique_ptr<MpiRanks> IfLaunched();
  virtual ~MpiRanks() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Runs `step` on every rank; if it threw InputError on any, every rank
  // throws the error of the lowest such rank (named when not rank 0), so
  // that no rank is left waiting for another.
  virtual void Together(const std::function<void()>& step) = 0;
  // InputError on every rank unless every rank planned the same graphs
  // (content hashes) and tasks as rank 0.
  virtual void CheckSamePlan(const SweepPlan& plan) = 0;
  // Rank 0: runs `todo` over all ranks, calling `done` (on this thread) for
  // each finished task, and returns how many tasks each rank ran. Other
  // ranks: run the tasks they are given (and return nothing).
  virtual std::vector<size_t> Run(const SweepPlan& plan,
                                  const std::vector<size_t>& todo,
                                  const SweepConfig& config, int threads,
                                  const TaskDone& done) = 0;
};

}  // namespace remat
