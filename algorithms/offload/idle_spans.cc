#include "algorithms/offload/idle_spans.h"

#include <algorithm>

namespace remat {

std::vector<IdleSpan> LongestIdleSpans(
    const Graph& graph, std::span<const Event> schedule,
    const std::function<bool(NodeId)>& eligible) {
  const int32_t n = graph.num_nodes();
  // Per value: the event of its current instance's last use and the
  // compute done up to it, and the instance's longest span so far.
  std::vector<int64_t> last_use(n, -1), cost_at_last_use(n, 0);
  std::vector<IdleSpan> best(n, IdleSpan{kNoNode, 0, 0, 0});
  std::vector<IdleSpan> spans;
  auto close = [&](NodeId v) {
    if (best[v].value != kNoNode) spans.push_back(best[v]);
    best[v].value = kNoNode;
  };
  int64_t cost_so_far = 0;  // compute before the current event
  for (int64_t i = 0; i < static_cast<int64_t>(schedule.size()); ++i) {
    const Event e = schedule[i];
    if (e.op == Event::Op::kFree) {
      close(e.node);
      continue;
    }
    if (e.op != Event::Op::kCompute) continue;
    for (NodeId u : graph.inputs(e.node)) {
      const int64_t idle = cost_so_far - cost_at_last_use[u];
      if (idle > 0 && eligible(u) &&
          (best[u].value == kNoNode || idle > best[u].idle_cost)) {
        best[u] = {u, last_use[u], i, idle};
      }
    }
    cost_so_far += graph.cost(e.node);
    for (NodeId u : graph.inputs(e.node)) {
      last_use[u] = i;
      cost_at_last_use[u] = cost_so_far;
    }
    last_use[e.node] = i;
    cost_at_last_use[e.node] = cost_so_far;
  }
  for (NodeId v = 0; v < n; ++v) close(v);
  std::sort(spans.begin(), spans.end(),
            [](const IdleSpan& a, const IdleSpan& b) {
              return a.after != b.after ? a.after < b.after
                                        : a.value < b.value;
            });
  return spans;
}

Schedule WithOffloads(std::span<const Event> schedule,
                      std::span<const IdleSpan> spans, int64_t lookahead,
                      bool wait) {
  const auto size = static_cast<int64_t>(schedule.size());
  // The computes' event indices, and each event's compute ordinal.
  std::vector<int64_t> compute_event, ordinal(size, 0);
  for (int64_t i = 0; i < size; ++i) {
    ordinal[i] = static_cast<int64_t>(compute_event.size());
    if (schedule[i].op == Event::Op::kCompute) compute_event.push_back(i);
  }
  std::vector<std::vector<NodeId>> offload_after(size), prefetch_before(size);
  for (const IdleSpan& s : spans) {
    offload_after[s.after].push_back(s.value);
    const int64_t k =
        std::max(ordinal[s.before] - lookahead, ordinal[s.after] + 1);
    prefetch_before[compute_event[k]].push_back(s.value);
  }
  Schedule out;
  out.reserve(schedule.size() + 3 * spans.size());
  for (int64_t i = 0; i < size; ++i) {
    for (NodeId v : prefetch_before[i]) out.push_back(Event::Prefetch(v));
    out.push_back(schedule[i]);
    for (NodeId v : offload_after[i]) out.push_back(Event::Offload(v));
    if (!wait) continue;
    for (NodeId v : offload_after[i]) out.push_back(Event::Wait(v));
  }
  return out;
}

}  // namespace remat
