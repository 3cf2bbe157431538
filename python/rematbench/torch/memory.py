"""The program's memory model: what a schedule run as a program
(rematbench.torch.fx_program) holds at each computation, which the harness's
simulator does not see: values freed after their last reader rather than
at the schedule's free, parts of a node that a recomputation leaves out,
parameter gradients a recomputation allocates again, the returned loss,
and the generator states the program saves. Plans are judged by it (a
schedule fits when its program does), and bench/studies/torch_peak_gap.py
compares it with the allocator.
"""

import collections
import operator

import torch

from rematbench.torch import rng
from rematbench.torch.partition import is_alias


def viewed(n):
    """The FX node whose storage n's result is a view of, or None: views,
    and the outputs (getitem) of ops that return several views (unbind,
    the unsafe splits)."""
    if n.op != "call_function" or not n.args or \
            not isinstance(n.args[0], torch.fx.Node):
        return None
    if n.target is operator.getitem:
        n = n.args[0]  # the op it is one of the results of
        return n if n.op == "call_function" and n.args and \
            is_alias(n.target) else None
    return n.args[0] if is_alias(n.target) else None


def as_events(schedule):
    """A schedule's (op, node) pairs as (kind, node, position) events."""
    return [(op, v, k) for k, (op, v) in enumerate(schedule)]


class ProgramMemory:
    """The memory model of programs on `partition` (a
    rematbench.torch.partition.Partition); what it derives from the traced
    graph alone is built once and kept here."""

    def __init__(self, partition):
        self.partition, self.nodes = partition, partition.traced.nodes
        self._draw_sizes = self._gradient_bytes = self._node_parts = None

    def peak(self, schedule, anchoring=None):
        """The activation peak of `schedule` run as a program with `anchoring`
        (lowering.lower's): the largest of timeline's figures."""
        return max((b for _, b in self.timeline(schedule, anchoring)),
                   default=0)

    def timeline(self, schedule, anchoring=None):
        """[(event index, bytes)]: for each computation in `schedule` (its
        index there), the activation memory while it runs as a program: the
        simulated memory (docs/model.md) of the schedule with each value, or
        each part of a multi-output value, freed after its last reader as the
        program frees it (releases), plus what the program holds beside the
        schedule's values (held_beside)."""
        events = as_events(schedule)
        return self.held_beside(events, self.schedule_timeline(events),
                                anchoring)

    def schedule_timeline(self, events):
        """[(event index, node, bytes before it, bytes it adds)] for each
        computation in `events`: the program's memory without the generator
        states (the loss included: it is returned, so it is held from its
        computation to the end), and the memory of the node's parts that the
        program computes there (releases) with its workspace, and with the
        parameter gradients it makes where it is not the node's last
        computation (gradient_bytes)."""
        nodes = self.nodes
        loss = next((n["id"] for n in nodes if n["kind"] == "loss"), None)
        released, skipped = self.releases(events, loss)
        grads = self.gradient_bytes()
        last = {v: i for i, (k, v, _) in enumerate(events) if k == "c"}
        mem, extra, timeline, loss_held = 0, 0, [], False
        for i, (k, v, _) in enumerate(events):
            n = nodes[v]
            if k == "f":  # other values are freed by `released`
                if v == loss:
                    mem -= n["mem"]
                    loss_held = True
                    extra += n["mem"]
                continue
            if v == loss and loss_held:
                loss_held = False
                extra -= n["mem"]
            own = n["mem"] - skipped[i]
            # A computation before the last allocates the parameter gradients
            # it makes too, which only the last one's become (the step's
            # outputs).
            again = grads[v] if last[v] != i else 0
            timeline.append((i, v, mem + extra,
                             own + n.get("workspace", 0) + again))
            mem += own - released[i]
        return timeline

    def held_beside(self, events, timeline, anchoring=None):
        """schedule_timeline's `timeline` as (event index, bytes) with the
        generator states the program holds (CPU: a 5,056-byte tensor each on
        the model's device; on CUDA the states are in host memory). A random
        op that the schedule computes more than once has its recomputations
        start from a saved state: its own, saved at its first execution, or,
        with `anchoring` (lowering.lower's (anchors, saves, chains)), its
        anchor's until the recomputation that saves its own (from then on its
        own), or the state a recomputation of the random op before it left.
        Each saved state is held from where it is saved to the last
        recomputation that starts from it. A first execution saves the state
        it starts from while it runs (run_and_save_rng_state), kept only if
        recomputations start from it. Each recomputation saves the state it
        interrupts while it runs, and one that starts from an anchor before it
        first replays the draws in between, one at a time: the largest of them
        (rng.draw_bytes) is held before the op's own result is. States
        of random ops run out of eager order are recorded before the step and
        held through it, and every execution runs from one."""
        part = self.partition
        owner = part.owner
        state = self.state_bytes()
        in_order = part.random_in_eager_order(events)
        computed = collections.Counter(v for k, v, _ in events if k == "c")
        runs = collections.defaultdict(list)  # node -> its computation events
        for i, (k, v, _) in enumerate(events):
            if k == "c":
                runs[v].append(i)
        base = 0 if in_order else state * len(part.random)
        delta = collections.Counter()  # states saved (+) and dropped (-)
        draws = collections.Counter()  # event -> largest draw it replays
        # event -> states it takes after its draws (its op's own state, the
        # state after its op)
        saving = collections.Counter()
        kept = set()  # random ops whose first execution's state is held
        if in_order:
            anchors, saves, chains = anchoring or ({}, {}, {})
            order = sorted(part.random)
            sizes = self.draw_sizes()
            until = {}  # saved state -> last event that starts from it
            for p, m in enumerate(order):
                v = owner[m]
                if computed[v] < 2:
                    continue
                a = anchors.get(m, m)
                if a == m:
                    until[a] = max(until.get(a, -1), runs[v][-1])
                    continue
                save = saves.get(m)
                if save is not None:
                    saving[save] += state
                    delta[save] += state
                    delta[runs[v][-1] + 1] -= state
                replaying = [i for i in runs[v][1:] if (m, i) not in chains and
                             (save is None or i <= save)]
                until[a] = max([until.get(a, -1)] + replaying)
                draw = max(sizes[j] for j in order[order.index(a):p])
                for i in replaying:
                    draws[i] = max(draws[i], draw)
            # The state after the op run at j, one tensor however many of m's
            # recomputations start from it.
            spans = {}
            for (m, i), j in chains.items():
                spans[(m, j)] = max(spans.get((m, j), -1), i)
            for (m, j), i in spans.items():
                saving[j] += state
                delta[j] += state
                delta[i + 1] -= state
            for a, i in until.items():
                delta[runs[owner[a]][0]] += state
                delta[i + 1] -= state
            kept = set(until)
        random = {owner[m] for m in part.random}
        # Nodes whose first execution saves a state it drops after the op.
        dropped = {owner[m] for m in part.random if m not in kept}
        out, held, seen, at = [], base, set(), 0
        for i, v, before, own in timeline:
            while at <= i:
                held += delta.get(at, 0)
                at += 1
            again = v in seen
            seen.add(v)
            replay = state if v in random and (again or not in_order or
                                              v in dropped) else 0
            draw = draws.get(i, 0)
            # States taken here are taken after the draws.
            new = saving.get(i, 0)
            if draw:
                # The draws run before the op allocates; a node of other ops
                # besides the random one may hold some of its own by then.
                own = max(own + new, draw) if len(part.members[v]) == 1 \
                    else own + new + draw
            else:
                own += new
            out.append((i, before + own + held - new + replay))
        return out

    def draw_sizes(self):
        """{FX index of a random op: the bytes its replayed draw holds}
        (rng.draw_bytes), built once per program."""
        if self._draw_sizes is None:
            part = self.partition
            self._draw_sizes = {m: rng.draw_bytes(part.fx[m]) for m in part.random}
        return self._draw_sizes

    def gradient_bytes(self):
        """[bytes of the parameter gradients that node v's ops allocate] for
        the n nodes: the storage of each gradient the step returns, made by one
        of v's members (a multi-output op's outputs among them, as a
        convolution's backward makes its weight's). The node's `mem` leaves
        them out (they are static memory), which holds for the computation
        whose gradients the step returns, its last; every computation before
        it allocates them again, briefly, and recomputing a convolution's
        backward in ResNet-50's layer4 allocates 9.4 MB that way. Built once
        per program."""
        if self._gradient_bytes is not None:
            return self._gradient_bytes
        part = self.partition
        fx = part.fx

        def nbytes(val):
            return val.untyped_storage().nbytes() \
                if isinstance(val, torch.Tensor) else 0

        out = [0] * len(self.nodes)
        for m, v in part.owner.items():
            val = fx[m].meta.get("val")
            if m in part.grad_parts:
                out[v] += sum(nbytes(val[k]) for k in part.grad_parts[m])
            elif m in part.grad_src and fx[m].target is not \
                    operator.getitem and not is_alias(fx[m].target):
                out[v] += nbytes(val)
        self._gradient_bytes = out
        return out

    def node_parts(self):
        """(parts, member_reads, instance) of the traced step: parts[v] maps
        each storage that node v keeps for other nodes (an FX member, views
        followed to their base) to its bytes, for nodes that keep several whose
        sizes add up to the node's memory (a batch norm's output and
        statistics); member_reads[m] maps each other node that FX member m
        reads to the set of its parts m reads (None: the whole node, or a part
        not known); instance is _instance's. Built once per program."""
        if self._node_parts is not None:
            return self._node_parts
        part, nodes = self.partition, self.nodes
        fx, owner, index = part.fx, part.owner, part.index
        parts, root_of = {}, {}
        for v, keep in enumerate(part.keep):
            roots = {}
            for m in keep:
                # Views of one storage are one part: an unbind's outputs
                # (an RNN's input projection, a step each) are freed
                # together, after the last one's reader.
                r = m
                while (base := viewed(fx[r])) is not None and \
                        owner.get(index[base]) == v:
                    r = index[base]
                root_of[m] = r
                val = fx[r].meta.get("val")
                roots[r] = val.untyped_storage().nbytes() \
                    if isinstance(val, torch.Tensor) else None
            if len(roots) > 1 and None not in roots.values() and \
                    sum(roots.values()) == nodes[v]["mem"]:
                parts[v] = roots
        member_reads = {}
        for u, members in enumerate(part.members):
            for m in members:
                got = member_reads[m] = {}
                for x in fx[m].all_input_nodes:
                    v = owner.get(index[x])
                    if v is not None and v != u:
                        got.setdefault(v, set()).add(
                            root_of.get(index[x]) if v in parts else None)
        self._node_parts = parts, member_reads, self._instance(parts,
                                                                root_of)
        return self._node_parts

    def _instance(self, parts, root_of):
        """instance(v, read) -> (the parts of node v (node_parts) that the
        program does not compute, the FX members it runs) when the other nodes
        read only the parts `read` of an instance of v: program.build leaves
        out an op whose result no later op reads (dead code), unless it draws
        random numbers, writes a buffer or feeds the step's outputs. A
        recomputation of a batch-norm-and-ReLU node for the batch norm's
        backward, which reads only the statistics, runs the batch norm without
        the ReLU, and so does not read the batch norm's output (which the batch
        norm still allocates, and frees at once)."""
        part = self.partition
        fx, index = part.fx, part.index
        pinned = set(part.random) | set(part.writes) | set(part.side)
        for n in fx[-1].all_input_nodes:
            pinned.add(index[n])
        memo = {}

        def made_by(r):
            """The member that allocates part r: a multi-output op allocates
            its outputs whichever of them are read."""
            n = fx[r]
            return index[n.args[0]] if n.target is operator.getitem else r

        def instance(v, read):
            key = (v, frozenset(read))
            if key not in memo:
                members = part.members[v]
                inside, keep = set(members), set(part.keep[v])
                needed = set()
                for m in reversed(members):
                    if m in pinned or (m in keep and root_of[m] in read) \
                            or any(index[u] in needed for u in fx[m].users
                                   if index[u] in inside):
                        needed.add(m)
                memo[key] = ({r for r in parts[v]
                              if made_by(r) not in needed}, frozenset(needed))
            return memo[key]
        return instance

    def releases(self, events, loss):
        """({position in `events`: bytes the program frees right after that
        event}, {position of a computation: bytes of its node's parts that it
        does not compute}): each value (or each part of it, _node_parts) is
        freed after the last computation that reads it before the schedule
        frees it, or after its own computation when none does; a part that no
        computation reads before then is not computed, nor are the ops only it
        needs, whose inputs are then not read (_instance; found again until
        nothing changes, since a computation left out can leave parts of its
        inputs unread). The program frees a value when its last reader has run
        (FX frees a node's value after its last use), which can be before the
        schedule's free; a value the schedule never frees is held to the end.
        The loss is left out (the program returns it: timeline holds
        it)."""
        part, nodes = self.partition, self.nodes
        parts, member_reads, instance = self.node_parts()
        memo = {}

        def reads(v, needed):
            """{input node: its parts read} by a computation of v that runs
            the members `needed` (None: all). An input that no member reads in
            FX (a relation only the export knows) is read whole."""
            if (v, needed) not in memo:
                out = {}
                for u in nodes[v]["inputs"]:
                    whole = parts.get(u, (None,))
                    every = set().union(*(member_reads[m].get(u, ())
                                          for m in part.members[v]))
                    got = every if needed is None else set().union(
                        *(member_reads[m].get(u, ()) for m in needed))
                    if not every:
                        out[u] = whole
                    elif got:  # else only members left out read it
                        out[u] = whole if None in got else got
                memo[(v, needed)] = out
            return memo[(v, needed)]

        needed_at = {}  # computation -> the members it runs (None: all)
        while True:
            released, skipped = collections.Counter(), collections.Counter()
            last_compute, last_read, gone, found = {}, {}, {}, {}

            def close(v):
                """The instance of v computed at last_compute[v] ends."""
                i = last_compute[v]
                gone[v], found[i] = instance(v, set(last_read[v])) \
                    if v in parts else (set(), None)
                skipped[i] += sum(parts[v][r] for r in gone[v])

            for i, (kind, v, _) in enumerate(events):
                if kind == "c":
                    for u, keys in reads(v, needed_at.get(i)).items():
                        for key in keys:
                            last_read.setdefault(u, {})[key] = i
                    if v in last_compute and v not in gone:
                        close(v)
                    last_compute[v] = i
                    last_read[v] = {}  # a new instance
                    gone.pop(v, None)
                elif kind == "f" and v in last_compute and v != loss:
                    if v not in gone:
                        close(v)
                    whole = {None: nodes[v]["mem"]}
                    for key, b in parts.get(v, whole).items():
                        if key not in gone[v]:
                            released[last_read[v].get(
                                key, last_compute[v])] += b
            for v in last_compute:
                if v not in gone:
                    close(v)
            if found == needed_at:
                return released, skipped
            needed_at = found

    def state_bytes(self):
        """Bytes of one saved generator state on the measured device: the CPU
        generator's state tensor when the model is on the CPU; 0 on CUDA
        (states are host tensors there) or without random ops."""
        part = self.partition
        if part.device.type != "cpu" or not part.random:
            return 0
        return rng.get_state(part.device).numel()

    def most_held(self):
        """The most _program_peak can add to a schedule's simulated peak: every
        random op's state, one more while a replay runs, and the loss."""
        loss = sum(n["mem"] for n in self.nodes if n["kind"] == "loss")
        return self.state_bytes() * (len(self.partition.random) + 1) + loss
