// rematbench._core — the harness as a Python module (pybind11).
//
// The same functions the `remat` CLI calls (LoadGraph, RunAlgorithm and
// Judge, Simulate, RunSweep), so a figure means the same in both; the
// answers of solve, validate, list and sweep are the same JSON documents as
// the CLI's --json output, as Python dicts. InputError becomes
// rematbench.Error (a ValueError) carrying the CLI's one-line message. The
// GIL is released while graphs load and algorithms, simulations and sweeps
// run, so Python threads can solve in parallel.
//
// Algorithms marked `isolate` (the CBC-based Checkmate MILP) run in a
// child process as in the CLI (harness/isolation.h) once the package has
// called _enable_isolation with a command that starts this interpreter on
// this module's _isolated_child (rematbench/__init__.py): a crash there is
// status error, and Ctrl-C kills a CBC solve, which looks at no stop, where
// in this process it ran to its time limit. Without it they run in this
// process, one at a time behind their own lock.
#include <vector>

#include "harness/isolation.h"
#include "harness/sweep.h"
#include "model/errors.h"
#include "model/params.h"
#include "python/core.h"

#ifndef REMAT_DEFAULT_CORPUS
#define REMAT_DEFAULT_CORPUS "graphs/corpus/default.json"
#endif
#ifndef REMAT_BUILD_DIR
#define REMAT_BUILD_DIR ""
#endif

PYBIND11_MODULE(_core, m) {
  using namespace remat;
  using namespace remat::python;
  m.doc() =
      "rematbench's C++ core: graphs, the algorithm registry, solves, "
      "the simulator and sweeps.";
  // One line, as the CLI prints it: a message quoting the user's input
  // may hold any bytes, newlines included.
  // (Never destroyed: no Python object outlives the interpreter.)
  static py::exception<InputError>* error =
      new py::exception<InputError>(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::set_error(*error, Printable(e.what(), 2000).c_str());
    }
  });
  BindGraph(m);
  BindSchedule(m);
  BindRegistry(m);
  BindSolveAndSweep(m);
  m.def(
      "parse_bytes",
      [](const std::string& text) { return ParseBytes(text, "bytes"); },
      py::arg("text"), "'1.5GiB' -> 1610612736 (units as in budgets).");
  m.def("format_bytes", &FormatBytes, py::arg("bytes"));
  m.def("budget_grid", &BudgetGrid, py::arg("lower_bound"),
        py::arg("noremat_peak"), py::arg("count"),
        "The budgets of a sweep: `count` evenly spaced from the lower bound "
        "to the NoRemat peak, rounded up, without repeats.");
  m.def(
      "read_corpus",
      [](const py::object& path) { return ReadCorpus(AsPath(path, "path")); },
      py::arg("path"),
        "The graph specs of a corpus manifest.");
  m.def("_enable_isolation", &EnableIsolation, py::arg("command"),
        "Isolated algorithms run in a child process started by `command` "
        "followed by the isolation flag and this process's pid; the command "
        "must call _isolated_child with its sys.argv.");
  m.def(
      "_isolated_child",
      [](std::vector<std::string> argv) {
        if (argv.size() < 3 || argv[1] != kIsolatedSolveFlag) {
          throw InputError(
              "_isolated_child: not started as an isolated solve (argv[1] "
              "must be the isolation flag, argv[2] the parent's pid)");
        }
        std::vector<char*> args;
        for (std::string& arg : argv) args.push_back(arg.data());
        args.push_back(nullptr);
        // Answers the parent's request and ends the process.
        InitIsolation(static_cast<int>(argv.size()), args.data());
      },
      py::arg("argv"));
  m.attr("DEFAULT_CORPUS") = REMAT_DEFAULT_CORPUS;
  // The build folder the module was compiled in, where its `remat` lies:
  // rematbench.client answers through the module only for the
  // binary of the same build.
  m.attr("BUILD_DIR") = REMAT_BUILD_DIR;
}
