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
// Algorithms marked `isolate` (the CBC-based Checkmate MILP) run in this
// process, one at a time behind their own lock: isolation re-executes the
// running program, which here is the Python interpreter.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <sstream>

#include "harness/errors.h"
#include "harness/graph_json.h"
#include "harness/graph_source.h"
#include "harness/params.h"
#include "harness/registry.h"
#include "harness/results.h"
#include "harness/runner.h"
#include "harness/schedule.h"
#include "harness/simulator.h"
#include "harness/sweep.h"

#ifndef REMAT_DEFAULT_CORPUS
#define REMAT_DEFAULT_CORPUS "graphs/corpus/default.json"
#endif

// A Schedule is a Python class of its own, not a list converted each way.
PYBIND11_MAKE_OPAQUE(remat::Schedule)

namespace py = pybind11;

namespace remat::python {
namespace {

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

PyGraph Load(const std::string& spec) {
  py::gil_scoped_release release;
  return {std::make_shared<const Graph>(LoadGraph(spec)), spec};
}

// A Graph, or a spec to load.
PyGraph AsGraph(const py::object& graph) {
  if (py::isinstance<PyGraph>(graph)) return graph.cast<PyGraph>();
  if (py::isinstance<py::str>(graph)) return Load(graph.cast<std::string>());
  throw py::type_error("graph must be a rematbench.Graph or a spec string");
}

// None: unbounded; an int: bytes; a str: "512MiB" style.
int64_t AsBudget(const py::object& budget) {
  if (budget.is_none()) return kUnboundedBudget;
  if (py::isinstance<py::str>(budget)) {
    return ParseBytes(budget.cast<std::string>(), "budget");
  }
  if (py::isinstance<py::bool_>(budget) || !py::isinstance<py::int_>(budget)) {
    throw py::type_error("budget must be None, an int (bytes) or a str");
  }
  const int64_t bytes = budget.cast<int64_t>();
  if (bytes < 0) throw InputError("budget: must be >= 0 bytes");
  return bytes;
}

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

// A schedule from a Schedule or a path to its text file.
Schedule AsSchedule(const py::object& schedule, const Graph& graph) {
  if (py::isinstance<Schedule>(schedule)) return schedule.cast<Schedule>();
  if (py::isinstance<py::str>(schedule)) {
    return ReadScheduleFile(schedule.cast<std::string>(), graph.num_nodes());
  }
  throw py::type_error("schedule must be a rematbench.Schedule or a path");
}

Json NullOr(bool present, const Json& value) {
  return present ? value : Json(nullptr);
}

// One solve: its CLI document (`remat solve --json`) and its schedule.
struct Solution {
  Json doc;
  std::optional<Schedule> schedule;
};

Solution Solve(const py::object& graph_arg, const std::string& algorithm,
               const py::object& budget_arg, const py::object& params_arg,
               double timeout) {
  auto [name, items] = SplitSpec(algorithm);
  for (std::string& item : AsItems(params_arg)) items.push_back(item);
  const AlgorithmInfo& info = FindAlgorithm(name);
  const Params params = Params::Parse(items, info.params, name);
  const PyGraph g = AsGraph(graph_arg);
  const Graph& graph = *g.graph;
  const int64_t budget = AsBudget(budget_arg);
  Attempt attempt;
  {
    py::gil_scoped_release release;
    attempt = RunAlgorithm(graph, info, params, budget, timeout);
  }
  const SolveResult r = Judge(attempt, budget);
  const bool has = r.has_schedule;
  // The fields, their order and their nulls of `remat solve --json`.
  Json doc = {
      {"algorithm", info.name},
      {"params", params.given()},
      {"graph", graph.name()},
      {"budget_bytes", NullOr(budget != kUnboundedBudget, budget)},
      {"status", StatusName(r.status)},
      {"valid", NullOr(has, r.valid)},
      {"peak_bytes", NullOr(has, r.peak_bytes)},
      {"total_peak_bytes", NullOr(has, r.peak_bytes + graph.static_bytes())},
      {"cost", NullOr(has, r.cost)},
      {"base_cost", BaseCost(graph)},
      {"overhead", NullOr(has, r.overhead)},
      {"length", NullOr(has, r.length)},
      {"solve_seconds", r.solve_seconds},
      {"message", r.message}};
  if (r.lower_bound_cost) doc["lower_bound_cost"] = *r.lower_bound_cost;
  if (r.optimal) doc["optimal"] = true;
  if (!r.extra.empty()) doc["details"] = Json::parse(r.extra.dump());
  return {std::move(doc), std::move(attempt.output.schedule)};
}

// `remat validate --json`.
py::dict Validate(const py::object& graph_arg, const py::object& schedule_arg,
                  const py::object& budget_arg) {
  const PyGraph g = AsGraph(graph_arg);
  const Schedule schedule = AsSchedule(schedule_arg, *g.graph);
  const int64_t budget = AsBudget(budget_arg);
  SimulationResult sim;
  {
    py::gil_scoped_release release;
    sim = Simulate(*g.graph, schedule);
  }
  const bool fits = sim.valid && sim.peak_bytes <= budget;
  const Json doc = {
      {"graph", g.graph->name()},
      {"schedule", py::isinstance<py::str>(schedule_arg)
                       ? Json(schedule_arg.cast<std::string>())
                       : Json(nullptr)},
      {"valid", sim.valid},
      {"error",
       sim.valid ? Json(nullptr)
                 : Json({{"event", sim.error_index}, {"reason", sim.error}})},
      {"budget_bytes", NullOr(budget != kUnboundedBudget, budget)},
      {"fits_budget", fits},
      {"peak_bytes", sim.peak_bytes},
      {"cost", sim.cost},
      {"base_cost", sim.base_cost},
      {"overhead", sim.overhead},
      {"length", sim.length}};
  return ToPython(doc);
}

// `remat sweep`'s results document (results/SCHEMA.md).
py::object Sweep(const py::object& graphs, const py::object& algorithms,
                 const py::object& corpus, int budgets, int threads,
                 double timeout, const std::string& schedules_dir,
                 const std::string& results_dir,
                 const std::string& command_line) {
  SweepConfig config;
  config.graph_specs = AsSpecs(graphs);
  if (!corpus.is_none() || config.graph_specs.empty()) {
    const std::string path =
        corpus.is_none() ? REMAT_DEFAULT_CORPUS : corpus.cast<std::string>();
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
  config.budgets_per_graph = budgets;
  config.threads = threads;
  if (threads < 0) throw InputError("sweep: threads must be >= 0");
  if (!(timeout > 0)) throw InputError("sweep: timeout must be > 0 seconds");
  config.timeout_seconds = timeout;
  config.command_line = command_line;
  config.schedules_dir = schedules_dir;
  config.results_dir = results_dir;
  nlohmann::json results;
  {
    py::gil_scoped_release release;
    results = RunSweep(config);
  }
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

// The parameters as `remat list --json` writes them.
Json ParamsJson(const std::vector<ParamSpec>& specs) {
  Json params = Json::array();
  for (const ParamSpec& p : specs) {
    Json param = {
        {"name", p.name},
        {"default", NullOr(!p.default_value.empty(), p.default_value)},
        {"description", p.description}};
    if (!p.choices.empty()) param["choices"] = p.choices;
    params.push_back(param);
  }
  return params;
}

// `remat list --json`.
py::object ListJson() {
  Json algorithms = Json::array();
  for (const AlgorithmInfo* a : AllAlgorithms()) {
    algorithms.push_back({{"name", a->name},
                          {"description", a->description},
                          {"citation", a->citation},
                          {"exact", a->exact},
                          {"uses_budget", a->uses_budget},
                          {"params", ParamsJson(a->params)}});
  }
  Json generators = Json::array();
  for (const GeneratorInfo* g : AllGenerators()) {
    generators.push_back({{"name", g->name},
                          {"description", g->description},
                          {"params", ParamsJson(g->params)}});
  }
  Json formats = Json::array();
  for (const GraphFormat* f : AllGraphFormats()) {
    formats.push_back({{"name", f->name},
                       {"description", f->description},
                       {"read", static_cast<bool>(f->read)},
                       {"write", static_cast<bool>(f->write)}});
  }
  return ToPython(Json{{"algorithms", algorithms},
                       {"generators", generators},
                       {"formats", formats}});
}

py::tuple EventTuple(const Event& e) {
  return py::make_tuple(e.op == Event::Op::kCompute ? "c" : "f", e.node);
}

Schedule ScheduleFromEvents(const py::iterable& events) {
  Schedule schedule;
  for (const auto& item : events) {
    const auto pair = item.cast<std::pair<std::string, NodeId>>();
    if (pair.first != "c" && pair.first != "f") {
      throw InputError(
          "schedule: an event is ('c', node) or ('f', node), "
          "not ('" +
          pair.first + "', ...)");
    }
    if (pair.second < 0) throw InputError("schedule: negative node id");
    schedule.push_back(pair.first == "c" ? Event::Compute(pair.second)
                                         : Event::Free(pair.second));
  }
  return schedule;
}

std::string ScheduleText(const Schedule& schedule) {
  std::ostringstream out;
  WriteScheduleText(out, schedule);
  return out.str();
}

struct NodeView {
  std::shared_ptr<const Graph> graph;
  NodeId id;
};

NodeView NodeAt(const PyGraph& g, int64_t v) {
  if (v < 0) v += g.graph->num_nodes();
  if (v < 0 || v >= g.graph->num_nodes()) {
    throw py::index_error("node id out of range");
  }
  return {g.graph, static_cast<NodeId>(v)};
}

void BindGraph(py::module_& m) {
  py::class_<NodeView>(m, "Node", "One node of a Graph (read-only).")
      .def_property_readonly("id", [](const NodeView& n) { return n.id; })
      .def_property_readonly(
          "name", [](const NodeView& n) { return n.graph->node_name(n.id); })
      .def_property_readonly(
          "kind",
          [](const NodeView& n) { return NodeKindName(n.graph->kind(n.id)); })
      .def_property_readonly(
          "op", [](const NodeView& n) { return n.graph->op(n.id); })
      .def_property_readonly(
          "mem", [](const NodeView& n) { return n.graph->mem(n.id); })
      .def_property_readonly(
          "cost", [](const NodeView& n) { return n.graph->cost(n.id); })
      .def_property_readonly(
          "workspace",
          [](const NodeView& n) { return n.graph->workspace(n.id); })
      .def_property_readonly("grad_of",
                             [](const NodeView& n) -> py::object {
                               const NodeId g = n.graph->grad_of(n.id);
                               if (g == kNoNode) return py::none();
                               return py::int_(g);
                             })
      .def_property_readonly(
          "is_target",
          [](const NodeView& n) { return n.graph->is_target(n.id); })
      .def_property_readonly("inputs",
                             [](const NodeView& n) {
                               auto in = n.graph->inputs(n.id);
                               return std::vector<NodeId>(in.begin(), in.end());
                             })
      .def_property_readonly("consumers",
                             [](const NodeView& n) {
                               auto out = n.graph->consumers(n.id);
                               return std::vector<NodeId>(out.begin(),
                                                          out.end());
                             })
      .def("__repr__", [](const NodeView& n) {
        return "<rematbench.Node " + std::to_string(n.id) + " " +
               n.graph->node_name(n.id) + ">";
      });

  py::class_<PyGraph>(m, "Graph",
                      "An immutable training graph (DESIGN.md section 1). "
                      "Make one with load_graph or parse_graph_json.")
      .def_property_readonly("name",
                             [](const PyGraph& g) { return g.graph->name(); })
      .def_property_readonly("spec", [](const PyGraph& g) { return g.spec; })
      .def_property_readonly(
          "num_nodes", [](const PyGraph& g) { return g.graph->num_nodes(); })
      .def_property_readonly(
          "num_edges", [](const PyGraph& g) { return g.graph->num_edges(); })
      .def_property_readonly(
          "static_bytes",
          [](const PyGraph& g) { return g.graph->static_bytes(); })
      .def_property_readonly(
          "memory_unit",
          [](const PyGraph& g) { return g.graph->memory_unit(); })
      .def_property_readonly(
          "cost_unit", [](const PyGraph& g) { return g.graph->cost_unit(); })
      .def_property_readonly(
          "provenance",
          [](const PyGraph& g) { return ToPython(g.graph->provenance()); })
      .def_property_readonly(
          "content_hash",
          [](const PyGraph& g) { return ContentHash(*g.graph); })
      .def_property_readonly(
          "base_cost", [](const PyGraph& g) { return BaseCost(*g.graph); })
      .def_property_readonly(
          "lower_bound_bytes",
          [](const PyGraph& g) { return MemoryLowerBound(*g.graph); })
      .def_property_readonly(
          "noremat_peak_bytes",
          [](const PyGraph& g) { return NoRematPeak(*g.graph); })
      .def_property_readonly("targets",
                             [](const PyGraph& g) {
                               auto t = g.graph->targets();
                               return std::vector<NodeId>(t.begin(), t.end());
                             })
      .def_property_readonly("topological_order",
                             [](const PyGraph& g) {
                               auto t = g.graph->topological_order();
                               return std::vector<NodeId>(t.begin(), t.end());
                             })
      .def_property_readonly("nodes",
                             [](const PyGraph& g) {
                               std::vector<NodeView> nodes;
                               for (NodeId v = 0; v < g.graph->num_nodes(); ++v)
                                 nodes.push_back({g.graph, v});
                               return nodes;
                             })
      .def("__len__", [](const PyGraph& g) { return g.graph->num_nodes(); })
      .def("__getitem__", &NodeAt)
      .def(
          "summary",
          [](const PyGraph& g) {
            return ToPython(ToJson(Summarize(*g.graph, g.spec)));
          },
          "The figures a results file lists per graph: name, spec, nodes, "
          "edges, base_cost, static_bytes, lower_bound_bytes, "
          "noremat_peak_bytes, content_hash.")
      .def(
          "write",
          [](const PyGraph& g, const std::string& format) {
            std::ostringstream out;
            WriteGraph(out, *g.graph, format);
            return out.str();
          },
          py::arg("format") = "json",
          "The graph as text in a registered output format (json, dot, ...).")
      .def("__repr__", [](const PyGraph& g) {
        return "<rematbench.Graph " + g.graph->name() + ": " +
               std::to_string(g.graph->num_nodes()) + " nodes>";
      });

  m.def("load_graph", &Load, py::arg("spec"),
        "A graph file (any registered format, chosen by its content) or a "
        "generator spec such as 'chain:n=16'.");
  m.def(
      "parse_graph_json",
      [](const std::string& text, const std::string& source) {
        py::gil_scoped_release release;
        return PyGraph{
            std::make_shared<const Graph>(ParseGraphJson(text, source)),
            source};
      },
      py::arg("text"), py::arg("source") = "<string>",
      "A graph from native-format JSON text; `source` names it in errors.");
}

void BindSchedule(py::module_& m) {
  py::class_<Schedule>(m, "Schedule",
                       "Compute and free events: ('c', node) / ('f', node).")
      .def(py::init(&ScheduleFromEvents), py::arg("events"))
      .def("__len__", [](const Schedule& s) { return s.size(); })
      .def("__getitem__",
           [](const Schedule& s, int64_t i) {
             if (i < 0) i += static_cast<int64_t>(s.size());
             if (i < 0 || i >= static_cast<int64_t>(s.size())) {
               throw py::index_error("event index out of range");
             }
             return EventTuple(s[i]);
           })
      .def("events",
           [](const Schedule& s) {
             py::list events;
             for (const Event& e : s) events.append(EventTuple(e));
             return events;
           })
      .def("__iter__",
           [](const Schedule& s) {
             py::list events;
             for (const Event& e : s) events.append(EventTuple(e));
             return py::iter(events);
           })
      .def("__eq__",
           [](const Schedule& a, const Schedule& b) { return a == b; })
      .def("to_text", &ScheduleText,
           "The text format (c <id> / f <id>, one per line).")
      .def_static(
          "from_text",
          [](const std::string& text, const PyGraph& g) {
            std::istringstream in(text);
            return ParseScheduleText(in, "<string>", g.graph->num_nodes());
          },
          py::arg("text"), py::arg("graph"))
      .def("__repr__", [](const Schedule& s) {
        return "<rematbench.Schedule of " + std::to_string(s.size()) +
               " events>";
      });
  m.def(
      "read_schedule",
      [](const std::string& path, const PyGraph& g) {
        return ReadScheduleFile(path, g.graph->num_nodes());
      },
      py::arg("path"), py::arg("graph"));

  py::class_<SimulationResult>(m, "Simulation",
                               "The simulator's figures for one schedule.")
      .def_readonly("valid", &SimulationResult::valid)
      .def_readonly("error_index", &SimulationResult::error_index)
      .def_readonly("error", &SimulationResult::error)
      .def_readonly("peak_bytes", &SimulationResult::peak_bytes)
      .def_readonly("cost", &SimulationResult::cost)
      .def_readonly("length", &SimulationResult::length)
      .def_readonly("base_cost", &SimulationResult::base_cost)
      .def_readonly("overhead", &SimulationResult::overhead)
      .def_readonly("memory_at_event", &SimulationResult::memory_at_event);
  m.def(
      "simulate",
      [](const py::object& graph, const py::object& schedule, bool timeline) {
        const PyGraph g = AsGraph(graph);
        const Schedule s = AsSchedule(schedule, *g.graph);
        py::gil_scoped_release release;
        return Simulate(*g.graph, s, {.record_timeline = timeline});
      },
      py::arg("graph"), py::arg("schedule"), py::arg("timeline") = false,
      "Simulates a schedule (a Schedule or a file path); with timeline, "
      "memory_at_event holds the memory at every event.");
  m.def("validate", &Validate, py::arg("graph"), py::arg("schedule"),
        py::arg("budget") = py::none(),
        "`remat validate --json`: the simulator's verdict on a schedule.");
}

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
        py::arg("timeout") = 0.0,
        "Runs one algorithm ('name' or 'name:k=v,...', more parameters as a "
        "list of 'k=v' or a dict) on a Graph or spec at a budget (None, "
        "bytes, or '512MiB'); timeout in seconds (<= 0: none). The schedule "
        "is simulated and judged as by `remat solve`.");
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

}  // namespace
}  // namespace remat::python

PYBIND11_MODULE(_core, m) {
  using namespace remat;
  using namespace remat::python;
  m.doc() =
      "rematbench's C++ core: graphs, the algorithm registry, solves, "
      "the simulator and sweeps.";
  py::register_exception<InputError>(m, "Error", PyExc_ValueError);
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
  m.def("read_corpus", &ReadCorpus, py::arg("path"),
        "The graph specs of a corpus manifest.");
  m.attr("DEFAULT_CORPUS") = REMAT_DEFAULT_CORPUS;
}
