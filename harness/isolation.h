// Running an algorithm in a child process (AlgorithmInfo::isolate), so that
// a crash or abort inside a library it calls becomes one result with status
// error instead of ending the sweep (CBC 2.10 crashed in
// CglPreProcess::postProcess), and so that solvers with process-wide state
// (CBC's CbcMain1) run in parallel, one per process, with no lock.
//
// The child is this same executable (/proc/self/exe, so that algorithms
// registered only in a test binary exist in it too; in Python, the
// interpreter importing the same module: EnableIsolation) started with
// kIsolatedSolveFlag by posix_spawn, which is safe from a multithreaded
// (OpenMP) process where fork is not. It reads the request (graph, algorithm,
// parameters, budget, time limit) as JSON on stdin, runs the algorithm
// in-process and writes its output, schedule included, as JSON on stdout.
// The parent simulates that schedule like any other. The child dies with
// its parent (PR_SET_PDEATHSIG), and its watchdog answers with the
// algorithm's StandbyAnswer when the solve overruns its time limit by a
// grace of 5% of the limit (at least 2 s). A stop of the parent
// (model/stop.h) reaches the child as SIGTERM, which stops it in turn; a
// child that has not ended 0.5 s later (CBC does not look at the stop) is
// killed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "model/algorithm.h"
#include "model/graph.h"
#include "model/params.h"
#include "model/registry.h"

namespace remat {

inline constexpr char kIsolatedSolveFlag[] = "--remat-isolated-solve";

// Call first in main(). Started as a child by RunIsolated (argv[1] is
// kIsolatedSolveFlag, argv[2] the parent's pid), it answers the request and
// ends the process; otherwise it enables isolation in this process. Programs
// that never call it nor EnableIsolation (and the children themselves) run
// every algorithm in-process.
void InitIsolation(int argc, char** argv);
// Enables isolation in a process whose executable is not such a program
// (the Python module's, the Python interpreter): RunIsolated starts
// `command` (command[0] an executable's path) followed by
// kIsolatedSolveFlag and the parent's pid, and that command must call
// InitIsolation with those two as argv[1] and argv[2]. Call before any
// solve.
void EnableIsolation(std::vector<std::string> command);
bool IsolationEnabled();

// Runs `algorithm` in a child process. A child that dies becomes status
// error naming the signal or exit status; one that has not answered twice
// its watchdog's grace plus 1 s after its time limit is killed and becomes
// status timeout, without a schedule.
// The time limit counts from `started` (the solve's start) in the child
// too, so that writing, sending and reading the graph take from it. When
// a stop is requested the answer is status timeout, "stopped
// (interrupted)", without a schedule, within about 0.5 s.
AlgorithmOutput RunIsolated(const Graph& graph, const AlgorithmInfo& algorithm,
                            const Params& params, int64_t budget_bytes,
                            double timeout_seconds,
                            std::chrono::steady_clock::time_point started);

}  // namespace remat
