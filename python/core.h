// Shared by the files of rematbench._core (python/bindings.cc): the
// conversions between Python arguments and the harness's types, and the
// functions that bind each part of the module.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "model/graph.h"
#include "model/schedule.h"
#include "model/stop.h"
#include "model/timing.h"

// A Schedule is a Python class of its own, not a list converted each way.
PYBIND11_MAKE_OPAQUE(remat::Schedule)

namespace remat::python {

namespace py = pybind11;
using Json = nlohmann::ordered_json;

// JSON (either flavour) as Python objects: dict, list, str, int, float,
// bool, None.
template <typename J>
py::object ToPython(const J& j) {
  switch (j.type()) {
    case J::value_t::null:
      return py::none();
    case J::value_t::boolean:
      return py::bool_(j.template get<bool>());
    case J::value_t::number_integer:
      return py::int_(j.template get<int64_t>());
    case J::value_t::number_unsigned:
      return py::int_(j.template get<uint64_t>());
    case J::value_t::number_float:
      return py::float_(j.template get<double>());
    case J::value_t::string:
      return py::str(j.template get_ref<const std::string&>());
    case J::value_t::array: {
      py::list list;
      for (const auto& item : j) list.append(ToPython(item));
      return list;
    }
    case J::value_t::object: {
      py::dict dict;
      for (const auto& [key, value] : j.items()) {
        dict[py::str(key)] = ToPython(value);
      }
      return dict;
    }
    default:
      return py::none();  // binary and discarded values never occur here
  }
}

// A loaded graph and the spec it came from (results name both).
struct PyGraph {
  std::shared_ptr<const Graph> graph;
  std::string spec;
};

// A path or spec given as a str, an os.PathLike (pathlib.Path) or bytes
// (os.fsdecode); anything else is a TypeError naming `what`.
std::string AsPath(const py::handle& path, const char* what);
// An int within [low, high], named `what` in the InputError (the CLI's
// rule, harness/option_limits.h) even when it is beyond C's long long.
long long AsInt(const py::handle& value, long long low, long long high,
                const std::string& what);

// Loads a file or generator spec with the GIL released.
PyGraph Load(const std::string& spec);
// A Graph, or a spec to load.
PyGraph AsGraph(const py::object& graph);
// None: unbounded; an int: bytes; a str: "512MiB" style.
int64_t AsBudget(const py::object& budget);
// A schedule from a Schedule or a path to its text file.
Schedule AsSchedule(const py::object& schedule, const Graph& graph);
// The timing model of solve and validate, from the arguments that stand
// for `--link`, `--compute-rate` and `--host-budget`: a link name or
// "BYTES_PER_S[:LATENCY_S]", cost units per second (None: by the graph's
// cost unit) and a host budget as `budget` takes it (None: unbounded).
TimingModel AsTiming(const std::string& link, const py::object& compute_rate,
                     const py::object& host_budget);

// The calls of the module that may be stopped (Interruptible) and those
// in progress: the process's stop (model/stop.h) is cleared when the last
// of them ends.
class StopScope {
 public:
  StopScope();
  ~StopScope();
  StopScope(const StopScope&) = delete;
  StopScope& operator=(const StopScope&) = delete;
  // Stops the work of every call in progress.
  void Interrupt();
  // Whether a stop was asked for since this call began.
  bool Interrupted() const;

 private:
  uint64_t stops_at_start_;
};

// Runs `work`, which must not touch Python objects, on a thread of its own
// with the GIL released, while this thread runs Python's signal handlers
// every 50 ms (PyErr_CheckSignals, which acts in the main thread only):
// an exception a handler raises (Ctrl-C's KeyboardInterrupt) stops the
// work in progress, waits for it to end and is raised. A call whose work a
// stop cut short raises KeyboardInterrupt too, whichever thread made it:
// its answer would be a truncated one.
template <typename Work>
auto Interruptible(Work work) -> decltype(work()) {
  using Result = decltype(work());
  StopScope scope;
  std::packaged_task<Result()> task(std::move(work));
  std::future<Result> done = task.get_future();
  bool raised = false;
  {
    py::gil_scoped_release release;
    std::thread worker(std::move(task));
    while (done.wait_for(std::chrono::milliseconds(50)) !=
           std::future_status::ready) {
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {
        raised = true;
        scope.Interrupt();
        break;
      }
    }
    worker.join();
  }
  if (raised) throw py::error_already_set();
  if (scope.Interrupted()) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  return done.get();
}

// Graph, Node, load_graph, parse_graph_json (core_graph.cc).
void BindGraph(py::module_& m);
// Schedule, Simulation, read_schedule, simulate, validate (core_graph.cc).
void BindSchedule(py::module_& m);
// ParamSpec, AlgorithmInfo, GeneratorInfo, algorithms, list_json
// (core_run.cc).
void BindRegistry(py::module_& m);
// Solution, solve, sweep (core_run.cc).
void BindSolveAndSweep(py::module_& m);

}  // namespace remat::python
