"""The one wrapper around the `remat` binary that the scripts use.

    from rematbench import client
    remat = client.Remat("build/remat", root=ROOT, jobs=2, name="my_script")
    info = remat.info("chain:n=16")           # remat graph info --json G
    ans = remat.solve("noremat", "chain:n=16", budget=None, params=(), timeout=600)
    ans = remat.validate("chain:n=16", "s.txt", budget=3)
    doc = remat.sweep(["--graphs", "chain:n=64", "--algorithms", "revolve",
                       "--budgets", "8"])     # the results file of `remat sweep -o`
    ans = remat.call(["list", "--json"])      # any other subcommand, JSON answer
    infos = remat.parallel(remat.info, graphs)  # `jobs` calls at once, in order
    files.write_json("out/solves.json", {..., "calls": remat.calls()},
                     indent=1, sort_keys=True)

Rules every call follows:
- solve, validate and forward_cost use this package's compiled core when
  it was built with the binary (scripts/install.sh) instead of running the
  binary: same JSON answers, no process per call, and `parallel` solves run
  at once (the core releases the GIL). Algorithms marked `isolate` (CBC's
  checkmate_milp) still run through the binary, which gives each solve its
  own process. module=False always runs the binary.
- The binary runs in `root` (the source tree, which the package, installed
  elsewhere, cannot know: the script gives it), so graph paths relative to
  it work from any working directory and the logs do not depend on where
  the tree is checked out. A relative `path` is taken relative to the
  caller's working directory and made absolute.
- Exit 0 and 1 are answers (1 is a negative answer: infeasible, invalid);
  any other exit, or no JSON on stdout, ends the script (SystemExit) with
  "<name>: `remat ...` failed (exit N): <stderr>".
- Every JSON answer is logged as {"command": ["remat", ...args], "output":
  answer}. With cache=True (the default) the same question is answered from
  memory and not run or logged again; with cache=False every call runs and
  is logged (so a log may hold a command twice).
- Thread-safe: `parallel` runs `fn` over items in a thread pool of `jobs`.

Nothing here knows about any paper or table; a script builds its commands
(solve, info, validate, sweep) through the methods above, or `call` for the
rest, and writes its own files (rematbench.files).
"""
import concurrent.futures
import json
import os
import subprocess
import tempfile
import threading

import rematbench

GB = 1e9


class Remat:
    """Runs the remat binary, caches and logs its JSON answers."""

    def __init__(self, path, root, jobs=2, cache=True, name="remat",
                 module=True):
        self.path = os.path.abspath(path)
        self.root = os.path.abspath(root)
        self.jobs = jobs
        self.name = name
        self.log = []       # [{"command": ["remat", ...], "output": answer}]
        self._cache = {} if cache else None
        self._lock = threading.Lock()
        self.module = load_module(self.path) if module else None

    # -- running --------------------------------------------------------------

    def run(self, args, ok=(0, 1)):
        """`remat <args>` in the root; returns the CompletedProcess (text). Exits
        the script when the status is not in `ok`."""
        proc = subprocess.run([self.path] + list(args), capture_output=True,
                              text=True, cwd=self.root)
        if proc.returncode not in ok:
            raise SystemExit(f"{self.name}: `{' '.join([self.path] + list(args))}` "
                             f"failed (exit {proc.returncode}): {proc.stderr.strip()}")
        return proc

    def call(self, args, answer=None):
        """The JSON that `remat <args>` prints (args include --json where the
        subcommand needs it), cached and logged as described above. With
        `answer` (a function), the module answers instead of the binary."""
        key = tuple(args)
        if self._cache is not None:
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
        if answer is not None:
            try:
                output = answer()
            except self.module.Error as e:
                raise SystemExit(f"{self.name}: `{' '.join(['remat'] + list(args))}` "
                                 f"failed: {e}")
            self.remember(key, ["remat"] + list(args), output)
            return output
        proc = self.run(args)
        try:
            output = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise SystemExit(f"{self.name}: `{' '.join([self.path] + list(args))}` "
                             f"printed no JSON: {proc.stderr.strip()}")
        self.remember(key, ["remat"] + list(args), output)
        return output

    def remember(self, key, command, output):
        """Cache `output` under `key` and log it as the answer of `command`
        (for figures a script derives itself, such as forward_cost)."""
        with self._lock:
            if self._cache is not None:
                self._cache[key] = output
            self.log.append({"command": command, "output": output})

    def cached(self, key):
        """The cached answer under `key`, or None."""
        if self._cache is None:
            return None
        with self._lock:
            return self._cache.get(key)

    def parallel(self, fn, items):
        """[fn(x) for x in items], `jobs` at once."""
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            return list(pool.map(fn, items))

    # -- subcommands ----------------------------------------------------------

    def info(self, graph):
        """`remat graph info --json <graph>`: nodes, bounds, static bytes..."""
        return self.call(["graph", "info", "--json", graph])

    def solve(self, algorithm, graph, budget=None, params=(), timeout=600):
        """`remat solve --json -a A -g G --timeout T [-b B] [-p k=v ...]`."""
        args = ["solve", "--json", "-a", algorithm, "-g", graph,
                "--timeout", str(timeout)]
        if budget is not None:
            args += ["-b", str(int(budget))]
        for p in params:
            args += ["-p", p]
        answer = None
        if self.module and not self._isolated(algorithm):
            answer = lambda: self.module.solve(
                self.in_root(graph), algorithm, None if budget is None else
                int(budget), list(params), timeout).json
        return self.call(args, answer)

    def _isolated(self, algorithm):
        """True for an algorithm that runs in a process of its own (and for
        an unknown one, whose error the binary reports)."""
        try:
            return self.module.algorithm(algorithm).isolate
        except self.module.Error:
            return True

    def validate(self, graph, schedule, budget=None):
        """`remat validate --json -g G -s SCHEDULE [-b B]`: the simulator's
        verdict on an external schedule file (text format c <id> / f <id>)."""
        args = ["validate", "--json", "-g", graph, "-s", schedule]
        if budget is not None:
            args += ["-b", str(int(budget))]
        answer = None
        if self.module:
            answer = lambda: dict(self.module.validate(
                self.in_root(graph), self.in_root(schedule),
                None if budget is None else int(budget)), schedule=schedule)
        return self.call(args, answer)

    def sweep(self, args):
        """Runs `remat sweep <args> -o TMP` (exit 0 required) and returns the
        results file it wrote (results/SCHEMA.md). Not cached or logged: the
        results file carries its own context."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sweep.json")
            self.run(["sweep"] + list(args) + ["-o", out], ok=(0,))
            with open(out) as f:
                return json.load(f)

    def forward_cost(self, graph):
        """Sum of `cost` over the forward and loss nodes of `graph` (one
        forward pass), from `remat graph convert --to json`."""
        key = ("fwd", graph)
        hit = self.cached(key)
        if hit is not None:
            return hit
        if self.module:
            try:
                nodes = [{"cost": n.cost, "kind": n.kind} for n in
                         self.module.load_graph(self.in_root(graph)).nodes]
            except self.module.Error as e:
                raise SystemExit(f"{self.name}: graph {graph}: {e}")
        else:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "g.json")
                self.run(["graph", "convert", graph, "--to", "json", "-o", out],
                         ok=(0,))
                with open(out) as f:
                    nodes = json.load(f)["nodes"]
        cost = sum(n["cost"] for n in nodes
                   if n.get("kind", "forward") in ("forward", "loss"))
        self.remember(key, ["remat", "graph", "convert", graph, "--to", "json"],
                      {"forward_cost": cost, "nodes": len(nodes)})
        return cost

    def in_root(self, path):
        """A graph spec or file as the binary, which runs in the root,
        reads it."""
        candidate = os.path.join(self.root, path)
        return candidate if os.path.exists(candidate) else path

    # -- the log --------------------------------------------------------------

    def calls(self, unique=True, drop=("nodes_by_in_degree",)):
        """The log sorted by command. unique: one entry per command (two
        workers may have asked the same question at once). drop: bulky
        fields removed from the answers."""
        entries = self.log
        if unique:
            entries = list({json.dumps(e["command"]): e for e in entries}.values())
        entries = sorted(entries, key=lambda e: json.dumps(e["command"]))
        for e in entries:
            if isinstance(e["output"], dict):
                for k in drop:
                    e["output"].pop(k, None)
        return entries


def load_module(binary):
    """This package when its compiled core was built in the build folder of
    `binary` (scripts/install.sh installs it from build/), else None."""
    try:
        build_dir = rematbench._core.BUILD_DIR
    except (ImportError, AttributeError):
        return None
    same = os.path.realpath(build_dir) == os.path.realpath(
        os.path.dirname(binary))
    return rematbench if build_dir and same else None


def git_commit(root, short=12):
    """HEAD of the source tree at `root`, abbreviated ("" outside a
    checkout)."""
    return subprocess.run(["git", "-C", root, "rev-parse", f"--short={short}",
                           "HEAD"], capture_output=True, text=True).stdout.strip()


def table(header, rows):
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)
