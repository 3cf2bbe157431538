// rematbench._core: the registry, solves and sweeps.
#include <mutex>

#include "harness/option_limits.h"
#include "harness/records.h"
#include "harness/registry_json.h"
#include "harness/runner.h"
#include "harness/sweep.h"
#include "model/algorithm.h"
#include "model/errors.h"
#include "model/graph_source.h"
#include "model/params.h"
#include "model/registry.h"
#include "python/core.h"

#ifndef REMAT_DEFAULT_CORPUS
#define REMAT_DEFAULT_CORPUS "graphs/corpus/default.json"
#endif

namespace remat::python {

namespace {
std::mutex stop_mutex;
int calls_in_progress = 0;
uint64_t stops = 0;
}  // namespace

StopScope::StopScope() {
  std::lock_guard lock(stop_mutex);
  ++calls_in_progress;
  stops_at_start_ = stops;
}

StopScope::~StopScope() {
  std::lock_guard lock(stop_mutex);
  if (--calls_in_progress == 0) ClearStop();
}

void StopScope::Interrupt() {
  std::lock_guard lock(stop_mutex);
  ++stops;
  RequestStop();
}

bool StopScope::Interrupted() const {
  std::lock_guard lock(stop_mutex);
  return stops != stops_at_start_;
}

namespace {

// "k=v" items from a list of such strings or a dict.
std::vector<std::string> AsItems(const py::object& params) {
  std::vector<std::string> items;
  if (params.is_none()) return items;
  if (py::isinstance<py::dict>(params)) {
    for (const auto& [key, value] : params.cast<py::dict>()) {
      items.push_back(py::str(key).cast<std::string>() + "=" +
                      py::str(value).cast<std::string>());
    }
    return items;
  }
  if (py::isinstance<py::str>(params)) {
    return SplitParamList(params.cast<std::string>());
  }
  for (const auto& item : params) items.push_back(py::str(item));
  return items;
}

// A list of specs from a comma-separated string or a list of strings.
std::vector<std::string> AsSpecs(const py::object& specs) {
  std::vector<std::string> out;
  if (specs.is_none()) return out;
  if (py::isinstance<py::str>(specs)) {
    return SplitSpecList(specs.cast<std::string>());
  }
  for (const auto& item : specs) {
    for (std::string& spec : SplitSpecList(py::str(item))) {
      out.push_back(std::move(spec));
    }
  }
  return out;
}

// One solve: its CLI document (`remat solve --json`) and its schedule.
struct Solution {
  Json doc;
  std::optional<Schedule> schedule;
};

Solution Solve(const py::object& graph_arg, const std::string& algorithm,
               const py::object& budget_arg, const py::object& params_arg,
               const py::object& timeout_arg, const std::string& link,
               const py::object& compute_rate, const py::object& host_budget) {
  auto [name, items] = SplitSpec(algorithm);
  for (std::string& item : AsItems(params_arg)) items.push_back(item);
  const AlgorithmInfo& info = FindAlgorithm(name);
  const Params params = Params::Parse(items, info.params, name);
  const PyGraph g = AsGraph(graph_arg);
  const Graph& graph = *g.graph;
  const int64_t budget = AsBudget(budget_arg);
  const TimingModel timing = AsTiming(link, compute_rate, host_budget);
  // None, the default, is no time limit (as without `remat solve
  // --timeout`); otherwise the CLI's rule, so 0 is refused.
  double timeout = 0;
  if (!timeout_arg.is_none()) {
    timeout = timeout_arg.cast<double>();
    CheckTimeLimit(timeout, "solve: timeout");
  }
  Attempt attempt = Interruptible([&] {
    return RunAlgorithm(graph, info, params, budget, timeout, nullptr, nullptr,
                        &timing);
  });
  const SolveResult result = Judge(attempt, budget);
  return {SolveRecord(graph, info, params, budget, result),
          std::move(attempt.output.schedule)};
}

// `remat sweep`'s results document (results/SCHEMA.md).
py::object Sweep(const py::object& graphs, const py::object& algorithms,
                 const py::object& corpus, const py::object& budgets_arg,
                 const py::object& threads_arg, double timeout,
                 const py::object& schedules_dir,
                 const py::object& results_dir,
                 const std::string& command_line) {
  SweepConfig config;
  config.graph_specs = AsSpecs(graphs);
  if (!corpus.is_none() || config.graph_specs.empty()) {
    const std::string path =
        corpus.is_none() ? REMAT_DEFAULT_CORPUS : AsPath(corpus, "corpus");
    for (std::string& spec : ReadCorpus(path)) {
      config.graph_specs.push_back(spec);
    }
  }
  config.algorithm_specs = AsSpecs(algorithms);
  if (config.algorithm_specs.empty() || (config.algorithm_specs.size() == 1 &&
                                         config.algorithm_specs[0] == "all")) {
    config.algorithm_specs.clear();
    for (const AlgorithmInfo* a : AllAlgorithms()) {
      config.algorithm_specs.push_back(a->name);
    }
  }
  const int budgets = static_cast<int>(
      AsInt(budgets_arg, 1, kMaxBudgetsPerGraph, "sweep: budgets"));
  const int threads =
      static_cast<int>(AsInt(threads_arg, 0, kMaxThreads, "sweep: threads"));
  CheckTimeLimit(timeout, "sweep: timeout");
  config.budgets_per_graph = budgets;
  config.threads = threads;
  config.timeout_seconds = timeout;
  config.command_line = command_line;
  config.schedules_dir = AsPath(schedules_dir, "schedules_dir");
  config.results_dir = AsPath(results_dir, "results_dir");
  const nlohmann::json results =
      Interruptible([&config] { return RunSweep(config); });
  return ToPython(results);
}

const char* ParamTypeName(ParamSpec::Type type) {
  switch (type) {
    case ParamSpec::Type::kInt:
      return "int";
    case ParamSpec::Type::kDouble:
      return "double";
    case ParamSpec::Type::kChoice:
      return "choice";
    case ParamSpec::Type::kBytes:
      return "bytes";
    case ParamSpec::Type::kList:
      return "list";
  }
  return "?";
}

// `remat list --json`.
py::object ListJson() { return ToPython(RegistryJson()); }

}  // namespace

void BindRegistry(py::module_& m) {
  py::class_<ParamSpec>(m, "ParamSpec")
      .def_readonly("name", &ParamSpec::name)
      .def_property_readonly(
          "type", [](const ParamSpec& p) { return ParamTypeName(p.type); })
      .def_property_readonly("default",
                             [](const ParamSpec& p) -> py::object {
                               if (p.default_value.empty()) return py::none();
                               return py::str(p.default_value);
                             })
      .def_readonly("description", &ParamSpec::description)
      .def_readonly("choices", &ParamSpec::choices)
      .def("__repr__", [](const ParamSpec& p) {
        return "<rematbench.ParamSpec " + p.name + "=" +
               (p.default_value.empty() ? "<required>" : p.default_value) + ">";
      });
  py::class_<AlgorithmInfo>(m, "AlgorithmInfo")
      .def_readonly("name", &AlgorithmInfo::name)
      .def_readonly("description", &AlgorithmInfo::description)
      .def_readonly("citation", &AlgorithmInfo::citation)
      .def_readonly("exact", &AlgorithmInfo::exact)
      .def_readonly("uses_budget", &AlgorithmInfo::uses_budget)
      .def_readonly("isolate", &AlgorithmInfo::isolate)
      .def_readonly("params", &AlgorithmInfo::params)
      .def("__repr__", [](const AlgorithmInfo& a) {
        return "<rematbench.AlgorithmInfo " + a.name + ">";
      });
  py::class_<GeneratorInfo>(m, "GeneratorInfo")
      .def_readonly("name", &GeneratorInfo::name)
      .def_readonly("description", &GeneratorInfo::description)
      .def_readonly("params", &GeneratorInfo::params);
  // The registries live as long as the process: references, not copies.
  m.def(
      "algorithms",
      [] {
        std::vector<const AlgorithmInfo*> all = AllAlgorithms();
        return all;
      },
      py::return_value_policy::reference,
      "The registered algorithms, sorted by name.");
  m.def(
      "algorithm", [](const std::string& name) { return &FindAlgorithm(name); },
      py::return_value_policy::reference, py::arg("name"));
  m.def("generators", &AllGenerators, py::return_value_policy::reference,
        "The registered graph generators, sorted by name.");
  m.def("list_json", &ListJson,
        "`remat list --json`: algorithms, generators and formats.");
}

void BindSolveAndSweep(py::module_& m) {
  py::class_<Solution>(m, "Solution",
                       "One solve, judged by the simulator. `json` is the "
                       "document of `remat solve --json`; its fields are "
                       "also attributes.")
      .def_property_readonly("json",
                             [](const Solution& s) { return ToPython(s.doc); })
      .def_readonly("schedule", &Solution::schedule)
      .def("__getattr__",
           [](const Solution& s, const std::string& key) {
             if (key == "details" && !s.doc.contains(key)) {
               return py::object(py::dict());
             }
             if (key == "lower_bound_cost" && !s.doc.contains(key)) {
               return py::object(py::none());
             }
             if (key == "optimal" && !s.doc.contains(key)) {
               return py::object(py::bool_(false));
             }
             if (!s.doc.contains(key)) throw py::attribute_error(key);
             return ToPython(s.doc[key]);
           })
      .def("__repr__", [](const Solution& s) {
        return "<rematbench.Solution " + s.doc["algorithm"].get<std::string>() +
               " " + s.doc["status"].get<std::string>() + ">";
      });
  m.def("solve", &Solve, py::arg("graph"), py::arg("algorithm"),
        py::arg("budget") = py::none(), py::arg("params") = py::none(),
        py::arg("timeout") = py::none(), py::arg("link") = DefaultLink().name,
        py::arg("compute_rate") = py::none(),
        py::arg("host_budget") = py::none(),
        "Runs one algorithm ('name' or 'name:k=v,...', more parameters as a "
        "list of 'k=v' or a dict) on a Graph or spec at a budget (None, "
        "bytes, or '512MiB'); timeout in seconds > 0 (None: none). link, "
        "compute_rate and host_budget are `--link`, `--compute-rate` and "
        "`--host-budget` (None: the default). The schedule is simulated and "
        "judged as by `remat solve`; the Solution's `json` is its document.");
  m.def("sweep", &Sweep, py::arg("graphs") = py::none(),
        py::arg("algorithms") = "all", py::arg("corpus") = py::none(),
        py::arg("budgets") = 16, py::arg("threads") = 0,
        py::arg("timeout") = 60.0, py::arg("schedules_dir") = "",
        py::arg("results_dir") = ".",
        py::arg("command_line") = "rematbench.sweep",
        "`remat sweep`: every algorithm on every graph at `budgets` budgets "
        "per graph, in parallel; returns the results document "
        "(results/SCHEMA.md) as a dict. Without graphs (or with corpus) the "
        "graphs of a corpus manifest (default: the default corpus).");
}

}  // namespace remat::python
