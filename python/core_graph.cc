// rematbench._core: graphs, nodes, schedules and the simulator.
#include <fmt/format.h>

#include <sstream>

#include "harness/option_limits.h"
#include "harness/records.h"
#include "harness/results.h"
#include "model/algorithm.h"
#include "model/errors.h"
#include "model/graph_json.h"
#include "model/graph_source.h"
#include "model/params.h"
#include "model/reach_bound.h"
#include "model/simulator.h"
#include "python/core.h"

namespace remat::python {

std::string AsPath(const py::handle& path, const char* what) {
  if (py::isinstance<py::str>(path)) return path.cast<std::string>();
  const py::module_ os = py::module_::import("os");
  if (py::isinstance(path, os.attr("PathLike")) ||
      py::isinstance<py::bytes>(path)) {
    return os.attr("fsdecode")(path).cast<std::string>();
  }
  throw py::type_error(fmt::format(
      "{} must be a str or an os.PathLike, not {}", what,
      py::str(py::type::of(path).attr("__name__")).cast<std::string>()));
}

long long AsInt(const py::handle& value, long long low, long long high,
                const std::string& what) {
  if (py::isinstance<py::bool_>(value) || !py::isinstance<py::int_>(value)) {
    throw py::type_error(fmt::format(
        "{} must be an int, not {}", what,
        py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
  }
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0) {
    const std::string text = py::str(value).cast<std::string>();
    throw InputError(fmt::format("{}: must be in [{}, {}] (got {})", what, low,
                                 high, Printable(text, 40)));
  }
  CheckRange(n, low, high, what);
  return n;
}

PyGraph Load(const std::string& spec) {
  return Interruptible([&spec] {
    return PyGraph{std::make_shared<const Graph>(LoadGraph(spec)), spec};
  });
}

PyGraph AsGraph(const py::object& graph) {
  if (py::isinstance<PyGraph>(graph)) return graph.cast<PyGraph>();
  if (py::isinstance<py::str>(graph) ||
      py::isinstance(graph, py::module_::import("os").attr("PathLike"))) {
    return Load(AsPath(graph, "graph"));
  }
  throw py::type_error(
      "graph must be a rematbench.Graph, a spec string or an os.PathLike");
}

namespace {

// An int (bytes) or a str ("512MiB"), named `what` in errors.
int64_t AsBytes(const py::object& bytes, const std::string& what) {
  if (py::isinstance<py::str>(bytes)) {
    return ParseBytes(bytes.cast<std::string>(), what);
  }
  if (py::isinstance<py::bool_>(bytes) || !py::isinstance<py::int_>(bytes)) {
    throw py::type_error(what + " must be None, an int (bytes) or a str");
  }
  // Read as its decimal text, as the command line's options are: one rule
  // for the range.
  return ParseBytes(py::str(bytes).cast<std::string>(), what);
}

}  // namespace

int64_t AsBudget(const py::object& budget) {
  if (budget.is_none()) return kUnboundedBudget;
  return AsBytes(budget, "budget");
}

Schedule AsSchedule(const py::object& schedule, const Graph& graph) {
  if (py::isinstance<Schedule>(schedule)) return schedule.cast<Schedule>();
  if (py::isinstance<py::str>(schedule) ||
      py::isinstance(schedule, py::module_::import("os").attr("PathLike"))) {
    return ReadScheduleFile(AsPath(schedule, "schedule"), graph.num_nodes());
  }
  throw py::type_error("schedule must be a rematbench.Schedule or a path");
}

TimingModel AsTiming(const std::string& link, const py::object& compute_rate,
                     const py::object& host_budget) {
  TimingModel timing;
  timing.link = ParseLink(link, "link");
  if (!compute_rate.is_none()) {
    const double rate = compute_rate.cast<double>();
    // The rule of `--compute-rate`: a finite number above zero.
    if (!IsTimeLimit(rate)) {
      throw InputError(fmt::format(
          "compute_rate: must be a number of cost units per second > 0 "
          "(got {})",
          rate));
    }
    timing.compute_rate = rate;
  }
  if (!host_budget.is_none()) {
    timing.host_budget_bytes = AsBytes(host_budget, "host_budget");
  }
  return timing;
}

namespace {

py::tuple EventTuple(const Event& e) {
  return py::make_tuple(std::string(1, OpLetter(e.op)), e.node);
}

Schedule ScheduleFromEvents(const py::iterable& events) {
  Schedule schedule;
  for (const auto& item : events) {
    const auto pair = item.cast<std::pair<std::string, NodeId>>();
    const std::optional<Event::Op> op =
        pair.first.size() == 1 ? OpFromLetter(pair.first[0]) : std::nullopt;
    if (!op) {
      throw InputError(
          "schedule: an event is ('c', node), ('f', node), ('o', node), "
          "('p', node) or ('w', node), not ('" +
          pair.first + "', ...)");
    }
    if (pair.second < 0) throw InputError("schedule: negative node id");
    schedule.push_back({*op, pair.second});
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

// `remat validate --json`: read from a path, the schedule's events keep
// their lines for the error's line.
py::dict Validate(const py::object& graph_arg, const py::object& schedule_arg,
                  const py::object& budget_arg, const std::string& link,
                  const py::object& compute_rate,
                  const py::object& host_budget) {
  // In the command line's order, so that of two bad arguments the same one
  // is named.
  const int64_t budget = AsBudget(budget_arg);
  const TimingModel timing = AsTiming(link, compute_rate, host_budget);
  const PyGraph g = AsGraph(graph_arg);
  const ScheduleToValidate schedule =
      py::isinstance<py::str>(schedule_arg)
          ? ReadScheduleToValidate(schedule_arg.cast<std::string>(), *g.graph)
          : ScheduleToValidate{.events = AsSchedule(schedule_arg, *g.graph)};
  Json record;
  {
    py::gil_scoped_release release;
    record = ValidateRecord(*g.graph, schedule, budget, timing);
  }
  return ToPython(record);
}

}  // namespace

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
                      "An immutable training graph (docs/model.md). "
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
      .def(
          "reach_lower_bound",
          [](const PyGraph& g, int64_t states_per_level, double seconds) {
            if (states_per_level < 1 || !(seconds > 0)) {
              throw InputError(
                  "reach_lower_bound: states_per_level and seconds must be "
                  "positive");
            }
            ReachBound bound;
            {
              py::gil_scoped_release released;
              bound = ReachLowerBound(*g.graph, {states_per_level, seconds});
            }
            py::dict out;
            out["bytes"] = bound.bytes;
            out["witness"] = bound.witness == kNoNode
                                 ? py::object(py::none())
                                 : py::object(py::int_(bound.witness));
            out["unproven_above"] = bound.unproven_above;
            out["states"] = bound.states;
            out["limited"] = bound.limited;
            return out;
          },
          py::arg("states_per_level") = ReachBoundLimits{}.states_per_level,
          py::arg("seconds") = ReachBoundLimits{}.seconds,
          "A lower bound on the peak of every schedule that recomputes "
          "rather than offloads, at or above lower_bound_bytes "
          "(model/reach_bound.h, docs/model.md): a dict with bytes, "
          "witness (the node whose inputs the proof is about, or None), "
          "unproven_above (the least level not proven), states (sets "
          "examined) and limited (whether a level was given up for the "
          "limits).")
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

  m.def(
      "load_graph",
      [](const py::object& spec) { return Load(AsPath(spec, "spec")); },
      py::arg("spec"),
        "A graph file (any registered format, chosen by its content) or a "
        "generator spec such as 'chain:n=16'.");
  m.def(
      "parse_graph_json",
      [](const std::string& text, const std::string& source) {
        return Interruptible([&] {
          return PyGraph{
              std::make_shared<const Graph>(ParseGraphJson(text, source)),
              source};
        });
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
      [](const py::object& path, const PyGraph& g, bool lines) {
        std::vector<int64_t> event_lines;
        Schedule s = ReadScheduleFile(AsPath(path, "path"),
                                      g.graph->num_nodes(),
                                      lines ? &event_lines : nullptr);
        if (!lines) return py::cast(std::move(s));
        return py::object(py::make_tuple(std::move(s), event_lines));
      },
      py::arg("path"), py::arg("graph"), py::arg("lines") = false,
      "Reads a schedule file for `graph`; with lines, (schedule, the 1-based "
      "line of each event).");

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
      .def_readonly("makespan", &SimulationResult::makespan)
      .def_readonly("critical_path", &SimulationResult::critical_path)
      .def_readonly("parallelism", &SimulationResult::parallelism)
      .def_readonly("transfer_bytes", &SimulationResult::transfer_bytes)
      .def_readonly("host_peak_bytes", &SimulationResult::host_peak_bytes)
      .def_readonly("stall", &SimulationResult::stall)
      .def_readonly("memory_at_event", &SimulationResult::memory_at_event);
  m.def(
      "simulate",
      [](const py::object& graph, const py::object& schedule, bool timeline) {
        const PyGraph g = AsGraph(graph);
        const Schedule s = AsSchedule(schedule, *g.graph);
        return Interruptible([&] {
          return Simulate(*g.graph, s,
                          {.record_timeline = timeline, .critical_path = true});
        });
      },
      py::arg("graph"), py::arg("schedule"), py::arg("timeline") = false,
      "Simulates a schedule (a Schedule or a file path); with timeline, "
      "memory_at_event holds the memory at every event.");
  m.def("validate", &Validate, py::arg("graph"), py::arg("schedule"),
        py::arg("budget") = py::none(), py::arg("link") = DefaultLink().name,
        py::arg("compute_rate") = py::none(),
        py::arg("host_budget") = py::none(),
        "`remat validate --json`: the simulator's verdict on a schedule (a "
        "Schedule or a path to its text file) at a budget (None, bytes, or "
        "'512MiB'). link, compute_rate and host_budget are `--link`, "
        "`--compute-rate` and `--host-budget` (None: the default). An "
        "illegal event is reported in `error` with its 0-based event index, "
        "its reason and, for a file, its 1-based line (None for a "
        "Schedule).");
}

}  // namespace remat::python
