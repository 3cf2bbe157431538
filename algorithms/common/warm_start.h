// Warm starts: the cheapest schedule that a fixed list of other registered
// algorithms finds within a budget, the incumbent that the exact methods
// start from (exact_search prunes with its cost, checkmate_milp hands it to
// CBC as a MIP start, checkmate_lp and checkmate_milp take their stage
// order from it). The list is each method's `warm_start` parameter with a
// fixed, documented default, so adding an algorithm to the registry never
// changes another's results or time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/algorithm.h"
#include "model/graph.h"
#include "model/params.h"
#include "model/schedule.h"

namespace remat {

struct Incumbent {
  Schedule schedule;
  int64_t cost = 0;  // as simulated
  std::string algorithm;
};

// The `warm_start` parameter of algorithm `owner`: registered algorithms
// other than `owner`, '+'-separated, tried in this order (the order breaks
// ties), each with its default parameters.
ParamSpec WarmStartParam(const std::string& owner,
                         const std::string& default_names);

// The list as its parameter's text ("a+b"), for the details' warm_start.
std::string WarmStartText(const std::vector<std::string>& names);

// Runs each algorithm of `names` (the warm_start option) through the
// request's sub-solver, each for at most `seconds_each` and never past the
// request's deadline, passes each valid schedule through `transform` (if
// given; nullopt drops it) and returns the one the candidate pool keeps
// (candidate_pool.h) if it fits the request's budget: the cheapest, ties to
// the lower peak and then to the earlier name, so the answer is
// deterministic. `dropped` (if given) hears of each algorithm whose
// schedule fits the budget but is no candidate after `transform`: dropped
// by it (over_budget false) or transformed into one over the budget (true),
// with that fitting schedule as it came, so that the caller can say why a
// fitting heuristic is not its start, or answer with it.
using DroppedWarmStart =
    std::function<void(const Incumbent& fitting, bool over_budget)>;
std::optional<Incumbent> BestWarmStart(
    const Graph& graph, const SolveRequest& request,
    const std::vector<std::string>& names, double seconds_each,
    const std::function<std::optional<Schedule>(const Schedule&)>& transform =
        {},
    const DroppedWarmStart& dropped = {});

}  // namespace remat
