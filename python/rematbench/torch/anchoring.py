"""Sharing saved generator states between random ops: a schedule that
recomputes dropout many times holds one saved state per recomputed random
op; with an anchoring (lowering.lower's (anchors, saves, chains)) a
recomputation starts from an earlier op's state and replays the draws in
between, or from the state a recomputation of the op before it left, so
that the program holds fewer states at the cost of those draws. anchored()
chooses the anchoring of least predicted overhead whose program fits a
budget, by the program's memory model (rematbench.torch.memory).
"""

import collections
import math

from rematbench.torch import rng
from rematbench.torch.memory import as_events


def candidates(part, events):
    """Candidate anchors (lowering.lower's) for `events`, fewest replayed
    draws first: for k = 0, 1, 2, 3, 4, 6, 8, ... each random op the
    schedule recomputes starts from the state saved at the nearest anchor
    at most k random ops before it in eager order (an anchor is a
    recomputed random op), so a recomputation replays at most k draws and
    the program holds about one state per k + 1 random ops; the last
    candidate has the fewest anchors (one, unless a random op that draws
    by value stands between). Only where the schedule first runs the
    random ops in eager order (otherwise every state is recorded before
    the step); k = 0, {}, is every recomputed random op starting from its
    own state. A random op that is its own anchor is left out."""
    computed = collections.Counter(v for k, v, _ in events if k == "c")
    order = sorted(part.random)
    needed = [p for p, m in enumerate(order)
              if computed[part.owner[m]] > 1]
    if not needed or not part.random_in_eager_order(events):
        return [{}]
    # A replay draws the random ops from its anchor up to its own: none of
    # them may draw by value (rng.replayable).
    barrier, last = [], -1
    for p, m in enumerate(order):
        barrier.append(last)
        if not rng.replayable(part.fx[m]):
            last = p
    out, k = [], 0
    while True:
        anchors, a = {}, None
        for p in needed:
            if a is None or p - a > k or barrier[p] >= a:
                a = p
            anchors[order[p]] = order[a]
        shared = {m: a for m, a in anchors.items() if a != m}
        if not out or shared != out[-1]:
            out.append(shared)
        if k >= needed[-1] - needed[0]:
            return out
        k = k + 1 if k < 4 else k + k // 2


def replay_cost(memory, events, anchoring):
    """The time (the graph's cost units) of the draws that recomputations
    replay with `anchoring` (lowering.lower's): each draw costs what its
    random op's node costs (the op alone in a dropout's node)."""
    anchors, saves, chains = anchoring
    part, nodes = memory.partition, memory.nodes
    order = sorted(part.random)
    pos = {m: p for p, m in enumerate(order)}
    computed = collections.defaultdict(list)
    for i, (k, v, _) in enumerate(events):
        if k == "c":
            computed[v].append(i)
    total = 0
    for m, a in anchors.items():
        recomputed = computed[part.owner[m]][1:]
        runs = sum(1 for i in recomputed if i <= saves.get(m, i) and
                   (m, i) not in chains)
        total += runs * sum(nodes[part.owner[j]]["cost"]
                            for j in order[pos[a]:pos[m]])
    return total


def _memory_walk(memory, events, timeline, anchoring):
    """What choose_saves and choose_chains place states on: a state's
    bytes, the program's memory beside the schedule event by event under
    `anchoring` (held_beside's (event, bytes) figures, the position of
    each event among them and the bytes alone, which the caller raises
    where it holds a state), and the random ops in eager order with their
    positions."""
    figures = memory.held_beside(events, timeline, anchoring)
    order = sorted(memory.partition.random)
    return (memory.state_bytes(), figures,
            {i: p for p, (i, _) in enumerate(figures)},
            [b for _, b in figures], order,
            {m: p for p, m in enumerate(order)})


def choose_saves(memory, events, timeline, anchors, limit):
    """lowering.lower's saves for `anchors`: for each random op that
    starts from an anchor before it, the earliest recomputation from which
    holding its own state to its last recomputation keeps the program's
    memory within `limit` (the recomputations after it replay nothing);
    ops with the most replayed draws to spare first. Each state added
    raises the memory it spans; an anchor dropped earlier, or draws not
    replayed, only lower it, so the program stays within `limit`."""
    state, figures, at, mem, _, pos = _memory_walk(
        memory, events, timeline, (anchors, {}, {}))
    part = memory.partition
    recomputed = collections.defaultdict(list)
    for i, (k, v, _) in enumerate(events):
        if k == "c":
            recomputed[v].append(at[i])
    saves = {}
    for m in sorted(anchors, key=lambda m: -(pos[m] - pos[anchors[m]]) *
                    len(recomputed[part.owner[m]])):
        runs = recomputed[part.owner[m]][1:]
        if len(runs) < 2:
            continue  # nothing after the only recomputation to spare
        top, best, q = -math.inf, None, runs[-1]
        for r in reversed(runs[:-1]):
            top = max(top, max(mem[r:q + 1]))
            q = r - 1
            if top + state > limit:
                break
            best = r
        if best is not None:
            saves[m] = figures[best][0]
            for p in range(best, runs[-1] + 1):
                mem[p] += state
    return saves


def choose_chains(memory, events, timeline, anchors, saves, limit):
    """lowering.lower's chains for `anchors` and `saves`: a recomputation
    that would replay draws from an anchor starts instead from the state
    that the latest recomputation of the random op just before it (in
    eager order) left, kept from then on (that op ran from its own eager
    state, so the generator after it stands where it does before this
    one), where holding it keeps the memory within `limit`; earliest
    first. A forward recomputation running several random ops in order
    then replays only for its first one."""
    state, figures, at, mem, order, pos = _memory_walk(
        memory, events, timeline, (anchors, saves, {}))
    part = memory.partition
    runs = collections.defaultdict(list)
    for i, (k, v, _) in enumerate(events):
        if k == "c":
            runs[v].append(i)
    found = []
    for m in anchors:
        v, u = part.owner[m], part.owner[order[pos[m] - 1]]
        if u == v:
            continue
        for i in runs[v][1:]:
            if i >= saves.get(m, math.inf):
                break  # the saving recomputation replays, later ones none
            before = [j for j in runs[u] if j < i]
            if len(before) > 1:  # a recomputation, not the first run
                found.append((i, m, before[-1]))
    chains, held = {}, {}  # held: (m, j) -> where its state is held to
    for i, m, j in sorted(found):
        lo = at[held[(m, j)]] + 1 if (m, j) in held else at[j]
        if max(mem[lo:at[i] + 1], default=-math.inf) + state <= limit:
            chains[(m, i)] = j
            held[(m, j)] = i
            for p in range(lo, at[i] + 1):
                mem[p] += state
    return chains


def anchored(memory, solution, budget=None):
    """(anchoring, program peak, overhead) of `solution` run as a program,
    anchoring being lowering.lower's (anchors, saves, chains): of the
    candidate anchors (candidates) whose program peak is within `budget`,
    with the saves (choose_saves) and then the chains (choose_chains) that
    fit, the one of least predicted overhead; when none is or no budget is
    given, those of the least peak, with the saves and chains that keep
    it. The overhead adds the replayed draws' time to the schedule's."""
    events = as_events(solution.schedule)
    timeline = memory.schedule_timeline(events)
    base = solution.json.get("base_cost") or \
        solution.json["cost"] / solution.overhead

    def held(anchoring):
        return max((b for _, b in memory.held_beside(events, timeline,
                                                      anchoring)),
                   default=0)

    # The first candidate shares nothing: where it fits, it is the answer,
    # and the others need not be judged.
    own = held(({}, {}, {}))
    if budget is not None and own <= budget:
        return ({}, {}, {}), own, solution.overhead
    peaks = [(own, 0, {})] + [
        (held((a, {}, {})), k, a) for k, a in
        enumerate(candidates(memory.partition, events)[1:], 1)]
    fit = [t for t in peaks if budget is not None and t[0] <= budget]
    if fit and not fit[0][2]:
        return ({}, {}, {}), fit[0][0], solution.overhead
    if not fit:
        fit = [min(peaks)]
    best = None
    for peak, _, anchors in fit:
        limit = budget if budget is not None else peak
        saves = choose_saves(memory, events, timeline, anchors, limit)
        chains = choose_chains(memory, events, timeline, anchors, saves,
                               limit)
        anchoring = (anchors, saves, chains)
        overhead = solution.overhead + \
            replay_cost(memory, events, anchoring) / base
        if best is None or overhead < best[2]:
            best = (anchoring, held(anchoring), overhead)
    return best
