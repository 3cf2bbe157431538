"""Tests of the rematbench module's bindings (run by ctest as python.bindings:
against the installed package; REMAT_BINARY is the remat CLI,
REMAT_SOURCE_DIR the source tree).

Known answers on tiny graphs, the same documents as the CLI's --json output
(list, graph info figures, solve, validate, sweep), and bad input raising
rematbench.Error with the CLI's one-line message.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import rematbench as rb

REMAT = os.environ["REMAT_BINARY"]
SOURCE = os.environ["REMAT_SOURCE_DIR"]
DIAMOND = os.path.join(SOURCE, "tests", "fixtures", "diamond.json")
TMP = tempfile.mkdtemp(prefix="bindings_test.")

# a -> b, a -> c, (b, c) -> d with sizes by hand: NoRemat computes a, b
# (4 + 2 + workspace 3 = 9), c (8), frees a, d (5): peak 9, cost 21.
TINY = {
    "format": "rematbench-graph", "version": 1, "name": "tiny",
    "static_bytes": 7,
    "nodes": [
        {"id": 0, "name": "a", "mem": 4, "cost": 10, "inputs": []},
        {"id": 1, "name": "b", "mem": 2, "cost": 5, "workspace": 3,
         "inputs": [0]},
        {"id": 2, "name": "c", "mem": 2, "cost": 5, "inputs": [0]},
        {"id": 3, "name": "d", "kind": "loss", "mem": 1, "cost": 1,
         "inputs": [1, 2]},
    ],
}


def cli(*args, ok=(0, 1)):
    r = subprocess.run([REMAT, *args], capture_output=True, text=True)
    if r.returncode not in ok:
        raise AssertionError(f"remat {' '.join(args)}: exit {r.returncode}: "
                             f"{r.stderr}")
    return r


def cli_json(*args):
    return json.loads(cli(*args, "--json").stdout)


def cli_error(*args):
    """The CLI's one line on stderr for bad input (exit 2)."""
    r = subprocess.run([REMAT, *args], capture_output=True, text=True)
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    line = r.stderr.strip()
    assert line.startswith("remat: ") and "\n" not in line, line
    return line[len("remat: "):]


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def without(doc, *keys):
    return {k: v for k, v in doc.items() if k not in keys}


class Graphs(unittest.TestCase):

    def test_known_figures(self):
        g = rb.parse_graph_json(json.dumps(TINY), "tiny.json")
        self.assertEqual((g.name, g.num_nodes, g.num_edges, len(g)),
                         ("tiny", 4, 4, 4))
        self.assertEqual(g.static_bytes, 7)
        self.assertEqual(g.noremat_peak_bytes, 9)
        self.assertEqual(g.lower_bound_bytes, 9)
        self.assertEqual(g.base_cost, 21)
        self.assertEqual(g.targets, [3])
        self.assertEqual(g.topological_order, [0, 1, 2, 3])
        b = g.nodes[1]
        self.assertEqual((b.id, b.name, b.kind, b.mem, b.cost, b.workspace),
                         (1, "b", "forward", 2, 5, 3))
        self.assertEqual((b.inputs, b.consumers, b.grad_of, b.is_target),
                         ([0], [3], None, False))
        self.assertEqual(g[-1].kind, "loss")
        self.assertTrue(g[3].is_target)
        with self.assertRaises(IndexError):
            g[4]

    def test_reach_lower_bound(self):
        # tests/reach_bound_test.cc's hand graph: v reads p and q; whichever
        # is computed last, the other is live beside that step (1 + 4 or
        # 2 + 3), so no schedule peaks below 5, one more than the memory
        # lower bound.
        nodes = [{"id": 0, "name": "r", "mem": 2, "cost": 1, "inputs": []},
                 {"id": 1, "name": "p", "mem": 1, "cost": 1, "inputs": [0]},
                 {"id": 2, "name": "h", "mem": 2, "cost": 1, "inputs": [1]},
                 {"id": 3, "name": "q", "mem": 2, "cost": 1, "inputs": [2]},
                 {"id": 4, "name": "v", "mem": 1, "cost": 1,
                  "inputs": [1, 3]}]
        g = rb.parse_graph_json(json.dumps(
            {"format": "rematbench-graph", "version": 1, "name": "hand",
             "nodes": nodes}), "hand.json")
        self.assertEqual(g.lower_bound_bytes, 4)
        bound = g.reach_lower_bound()
        self.assertEqual((bound["bytes"], bound["witness"],
                          bound["unproven_above"], bound["limited"]),
                         (5, 4, 6, False))
        # With no room to search, only the memory lower bound is claimed.
        self.assertEqual(g.reach_lower_bound(states_per_level=1)["bytes"], 4)
        with self.assertRaises(rb.Error):
            g.reach_lower_bound(seconds=0)

    def test_figures_equal_the_cli(self):
        for spec in ("chain:n=16", DIAMOND,
                     "resnet:depth=18,batch=8,image=64"):
            g = rb.load_graph(spec)
            info = cli_json("graph", "info", spec)
            summary = g.summary()
            for key, value in summary.items():
                self.assertEqual(value, info[key], (spec, key))
            self.assertEqual(g.content_hash, info["content_hash"])
            self.assertEqual(g.spec, spec)

    def test_write_round_trip(self):
        g = rb.load_graph("chain:n=8")
        again = rb.parse_graph_json(g.write("json"))
        self.assertEqual(again.content_hash, g.content_hash)
        self.assertIn("digraph", g.write("dot"))


class Registry(unittest.TestCase):

    def test_list_equals_the_cli(self):
        self.assertEqual(rb.list_json(), cli_json("list"))

    def test_algorithms_and_params(self):
        names = [a.name for a in rb.algorithms()]
        self.assertEqual(names, sorted(names))
        self.assertIn("noremat", names)
        doc = {a["name"]: a for a in cli_json("list")["algorithms"]}
        for a in rb.algorithms():
            self.assertEqual(a.exact, doc[a.name]["exact"])
            self.assertEqual([(p.name, p.default, p.description)
                              for p in a.params],
                             [(p["name"], p["default"], p["description"])
                              for p in doc[a.name]["params"]])
            for p in a.params:
                self.assertIn(p.type, ("int", "double", "choice", "bytes",
                                       "list"))
        self.assertEqual(rb.algorithm("revolve").name, "revolve")
        self.assertIn("chain", [g.name for g in rb.generators()])


class Solve(unittest.TestCase):

    def test_noremat_known_answer(self):
        s = rb.solve("chain:n=16", "noremat")
        self.assertEqual((s.status, s.peak_bytes, s.cost), ("feasible", 18,
                                                             33))
        self.assertEqual(s.budget_bytes, None)
        self.assertEqual(sum(op == "c" for op, _ in s.schedule), s.length)
        self.assertEqual(s.length, 33)

    def test_same_document_and_schedule_as_the_cli(self):
        cases = [("checkpoint_last", "chain:n=16", "3", []),
                 ("revolve", "chain:n=16", "6", []),
                 ("chen_sqrtn", DIAMOND, None, []),
                 ("twremat", "resnet:depth=18,batch=8,image=64", "40MB", []),
                 ("dtr", "chain:n=16", "8", ["staleness=ops"]),
                 ("revolve", "chain:n=16", "2", [])]  # infeasible
        for algorithm, graph, budget, params in cases:
            out = os.path.join(TMP, "cli_schedule.txt")
            if os.path.exists(out):
                os.unlink(out)
            args = ["solve", "-a", algorithm, "-g", graph, "--timeout", "30",
                    "--schedule-out", out]
            if budget:
                args += ["-b", budget]
            for p in params:
                args += ["-p", p]
            want = cli_json(*args)
            s = rb.solve(graph, algorithm, budget=budget, params=params,
                         timeout=30)
            self.assertEqual(without(s.json, "solve_seconds"),
                             without(want, "solve_seconds"), algorithm)
            self.assertEqual(list(s.json), list(want))  # the CLI's order
            if os.path.exists(out):
                with open(out) as f:
                    self.assertEqual(s.schedule.to_text(), f.read())
            self.assertEqual(s.status, want["status"])

    def test_spec_params_and_budget_forms(self):
        g = rb.load_graph("chain:n=16")
        a = rb.solve(g, "dtr:staleness=ops", budget=8)
        b = rb.solve(g, "dtr", budget="8B", params={"staleness": "ops"})
        self.assertEqual(a.params, {"staleness": "ops"})
        self.assertEqual(a.schedule, b.schedule)
        self.assertEqual(a.budget_bytes, 8)

    def test_simulate_and_validate(self):
        g = rb.load_graph("chain:n=16")
        s = rb.solve(g, "checkpoint_last", budget=3)
        sim = rb.simulate(g, s.schedule, timeline=True)
        self.assertTrue(sim.valid)
        self.assertEqual((sim.peak_bytes, sim.cost, sim.length),
                         (s.peak_bytes, s.cost, s.length))
        self.assertEqual(len(sim.memory_at_event), len(s.schedule))
        self.assertEqual(max(sim.memory_at_event), sim.peak_bytes)
        path = write("s.txt", s.schedule.to_text())
        self.assertEqual(rb.validate(g, path, budget=3),
                         cli_json("validate", "-g", "chain:n=16", "-s", path,
                                  "-b", "3"))
        self.assertEqual(rb.read_schedule(path, g), s.schedule)
        v = rb.validate(g, s.schedule, budget=2)
        self.assertEqual((v["schedule"], v["fits_budget"]), (None, False))

    def test_invalid_schedule(self):
        g = rb.parse_graph_json(json.dumps(TINY))
        bad = rb.Schedule([("c", 0), ("c", 3)])
        sim = rb.simulate(g, bad)
        self.assertFalse(sim.valid)
        self.assertEqual(sim.error_index, 1)
        self.assertIn("input", sim.error)
        self.assertEqual(list(bad), [("c", 0), ("c", 3)])
        self.assertEqual(bad[-1], ("c", 3))
        self.assertEqual(rb.Schedule.from_text("c 0\nf 0\n", g).events(),
                         [("c", 0), ("f", 0)])

    def test_gil_released_during_solve(self):
        """A Python thread keeps running while another thread solves: with
        the GIL held for the whole solve it would not run at all."""
        g = rb.load_graph("chain:n=3000")
        done = threading.Event()
        solve_time = []

        def work():
            t0 = time.perf_counter()
            rb.solve(g, "dtr", budget=100)
            solve_time.append(time.perf_counter() - t0)
            done.set()

        ticks = 0
        thread = threading.Thread(target=work)
        thread.start()
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)
        thread.join()
        self.assertGreater(solve_time[0], 0.05, "the solve is too short to "
                           "tell")
        self.assertGreater(ticks, 5)


class Sweep(unittest.TestCase):

    def test_same_results_as_the_cli(self):
        out = os.path.join(TMP, "sweep.json")
        cli("sweep", "--graphs", "chain:n=12," + DIAMOND, "--algorithms",
            "noremat,revolve,checkpoint_last", "--budgets", "3", "--threads",
            "1", "-o", out, ok=(0,))
        with open(out) as f:
            want = json.load(f)
        got = rb.sweep(["chain:n=12", DIAMOND],
                       ["noremat", "revolve", "checkpoint_last"], budgets=3,
                       threads=1)

        def figures(doc):
            for run in doc["runs"]:
                for point in run["points"]:
                    point.pop("solve_seconds")
            return without(doc, "context")

        self.assertEqual(got["context"]["budgets_per_graph"], 3)
        self.assertEqual(figures(got), figures(want))

    def test_budget_grid(self):
        self.assertEqual(rb.budget_grid(3, 18, 4), [3, 8, 13, 18])
        self.assertEqual(rb.parse_bytes("1KiB"), 1024)
        self.assertTrue(os.path.exists(rb.DEFAULT_CORPUS))
        self.assertGreater(len(rb.read_corpus(rb.DEFAULT_CORPUS)), 3)


class Client(unittest.TestCase):
    """rematbench.client answers through the module with the binary's
    JSON."""

    def test_module_answers_like_the_binary(self):
        from rematbench import client
        via_module = client.Remat(REMAT, SOURCE)
        via_binary = client.Remat(REMAT, SOURCE, module=False)
        self.assertIsNotNone(via_module.module)
        self.assertIsNone(via_binary.module)
        fixture = os.path.relpath(DIAMOND, SOURCE)  # relative to the root
        for args in [("noremat", "chain:n=16"),
                     ("revolve", "chain:n=16", 6, ["slots=3"]),
                     ("chen_sqrtn", fixture),
                     ("revolve", "chain:n=16", 2)]:
            a, b = via_module.solve(*args), via_binary.solve(*args)
            self.assertEqual(without(a, "solve_seconds"),
                             without(b, "solve_seconds"), args)
        path = write("client.txt", rb.solve("chain:n=16", "noremat")
                     .schedule.to_text())
        self.assertEqual(via_module.validate("chain:n=16", path, 18),
                         via_binary.validate("chain:n=16", path, 18))
        self.assertEqual(via_module.forward_cost(fixture),
                         via_binary.forward_cost(fixture))
        self.assertEqual([e["command"] for e in via_module.calls()],
                         [e["command"] for e in via_binary.calls()])


class Errors(unittest.TestCase):
    """Each error is a rematbench.Error (a ValueError) whose message is the
    line `remat` prints after "remat: "."""

    def check(self, call, cli_args):
        """The CLI's message; an option (--budget, --host-budget) is named
        as the Python argument (budget, host_budget)."""
        with self.assertRaises(rb.Error) as caught:
            call()
        self.assertIsInstance(caught.exception, ValueError)
        want = re.sub(r"^--([a-z-]+)",
                      lambda option: option.group(1).replace("-", "_"),
                      cli_error(*cli_args))
        self.assertEqual(str(caught.exception), want)

    def test_bad_graphs(self):
        self.check(lambda: rb.load_graph("nosuchgen:n=3"),
                   ["graph", "info", "nosuchgen:n=3"])
        self.check(lambda: rb.load_graph("chain:n=-2"),
                   ["graph", "info", "chain:n=-2"])
        missing = os.path.join(TMP, "missing.json")
        self.check(lambda: rb.load_graph(missing),
                   ["graph", "info", missing])
        cyclic = dict(TINY, nodes=[dict(n) for n in TINY["nodes"]])
        cyclic["nodes"][0]["inputs"] = [3]
        path = write("cyclic.json", json.dumps(cyclic))
        self.check(lambda: rb.load_graph(path), ["graph", "info", path])
        with self.assertRaises(rb.Error):
            rb.parse_graph_json("{", "inline")

    def test_bad_solves(self):
        self.check(lambda: rb.solve("chain:n=4", "nosuch"),
                   ["solve", "-a", "nosuch", "-g", "chain:n=4"])
        self.check(lambda: rb.solve("chain:n=4", "revolve",
                                    params=["bogus=1"]),
                   ["solve", "-a", "revolve", "-g", "chain:n=4", "-p",
                    "bogus=1"])
        self.check(lambda: rb.solve("chain:n=4", "noremat", budget="12XB"),
                   ["solve", "-a", "noremat", "-g", "chain:n=4", "-b",
                    "12XB"])
        with self.assertRaises(TypeError):
            rb.solve(42, "noremat")

    def test_option_limits_as_the_cli(self):
        """The module refuses the options out of range that the CLI refuses."""
        huge = str(2**70)
        self.check(lambda: rb.solve("chain:n=4", "noremat", budget=2**70),
                   ["solve", "-a", "noremat", "-g", "chain:n=4", "-b", huge])
        for timeout in (-1, float("nan"), float("inf")):
            with self.assertRaises(rb.Error):
                rb.solve("chain:n=4", "noremat", timeout=timeout)
            with self.assertRaises(rb.Error):
                rb.sweep(["chain:n=4"], ["noremat"], timeout=timeout)
            cli("solve", "-a", "noremat", "-g", "chain:n=4", "--timeout",
                str(timeout), ok=(2,))
        with self.assertRaises(rb.Error):
            rb.sweep(["chain:n=4"], ["noremat"], threads=10**6)
        cli("sweep", "--graphs", "chain:n=4", "--algorithms", "noremat",
            "--threads", str(10**6), ok=(2,))

    def test_bad_schedules(self):
        path = write("bad.txt", "c 0\nx 1\n")
        self.check(lambda: rb.validate("chain:n=4", path),
                   ["validate", "-g", "chain:n=4", "-s", path])
        far = write("far.txt", "c 99\n")
        self.check(lambda: rb.validate("chain:n=4", far),
                   ["validate", "-g", "chain:n=4", "-s", far])
        with self.assertRaises(rb.Error):
            rb.Schedule([("x", 1)])

    def test_bad_timing_options(self):
        path = write("timing.txt", "c 0\n")
        self.check(lambda: rb.validate("chain:n=4", path, link="pcie9"),
                   ["validate", "-g", "chain:n=4", "-s", path, "--link",
                    "pcie9"])
        self.check(lambda: rb.solve("chain:n=4", "noremat",
                                    host_budget="12XB"),
                   ["solve", "-a", "noremat", "-g", "chain:n=4",
                    "--host-budget", "12XB"])
        for rate in (0, -1, float("nan"), float("inf")):
            with self.assertRaises(rb.Error):
                rb.validate("chain:n=4", path, compute_rate=rate)
            cli("validate", "-g", "chain:n=4", "-s", path, "--compute-rate",
                str(rate), ok=(2,))

    def test_bad_sweeps(self):
        self.check(lambda: rb.sweep(["chain:n=4"], ["nosuch"]),
                   ["sweep", "--graphs", "chain:n=4", "--algorithms",
                    "nosuch"])
        with self.assertRaises(rb.Error):
            rb.sweep(["chain:n=4"], ["noremat"], budgets=0)


class OutputRule(unittest.TestCase):
    """rematbench.files, which every script and bench writes through: what
    is not a regular file is written in place, never renamed over; an
    output that is one of the inputs is refused; a failed write is one
    line and leaves no temporary. Devices are made with mknod in a
    temporary folder, never the machine's own."""

    def setUp(self):
        from rematbench import files
        self.files = files
        self.dir = tempfile.mkdtemp(dir=TMP, prefix="output_rule.")

    def temporaries(self):
        return [n for n in os.listdir(self.dir) if ".tmp" in n]

    def run_python(self, code, limit=None):
        import resource

        def limited():
            if limit:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return subprocess.run([sys.executable, "-c", code], cwd=self.dir,
                              capture_output=True, text=True,
                              preexec_fn=limited, timeout=60)

    def test_devices_and_fifos_are_written_in_place(self):
        import stat
        null, full = (os.path.join(self.dir, n) for n in ("null", "full"))
        try:
            os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        except PermissionError:
            self.skipTest("mknod is not allowed here")
        self.files.write_json(null, {"a": 1})
        self.assertTrue(stat.S_ISCHR(os.lstat(null).st_mode))
        with self.assertRaises(self.files.OutputError) as e:
            self.files.write_text(full, "x" * 100000)
        self.assertEqual(str(e.exception),
                         f"{full}: write failed (No space left on device)")
        self.assertTrue(stat.S_ISCHR(os.lstat(full).st_mode))
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(
            target=lambda: got.append(open(fifo, "rb").read()))
        reader.start()
        self.files.write_text(fifo, "through the fifo\n")
        reader.join(10)
        self.assertEqual(got, [b"through the fifo\n"])
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertEqual(self.temporaries(), [])

    def test_links_to_stdout_stay_and_links_to_files_are_followed(self):
        link = os.path.join(self.dir, "stdout")
        os.symlink("/proc/self/fd/1", link)
        out = os.path.join(self.dir, "out.txt")
        with open(out, "w") as f:
            r = subprocess.run(
                [sys.executable, "-c",
                 "import sys; print('before', flush=True); "
                 "from rematbench import files; "
                 f"files.write_text({link!r}, 'document\\n'); print('after')"],
                stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.readlink(link), "/proc/self/fd/1")
        with open(out) as f:
            self.assertEqual(f.read(), "before\ndocument\nafter\n")
        target = write("target.txt", "old")
        to_target = os.path.join(self.dir, "to_target")
        os.symlink(target, to_target)
        self.files.write_text(to_target, "new")
        self.assertTrue(os.path.islink(to_target))
        with open(target) as f:
            self.assertEqual(f.read(), "new")
        self.assertEqual(self.temporaries(), [])

    def test_an_output_that_is_an_input_is_refused(self):
        results = os.path.join(self.dir, "r.json")
        cli("sweep", "--graphs", "chain:n=6", "--algorithms", "noremat",
            "--budgets", "2", "--threads", "1", "-o", results, ok=(0,))
        with open(results) as f:
            before = f.read()
        link = os.path.join(self.dir, "link.json")
        os.symlink(results, link)
        for out in (results, link):
            r = self.run_python(
                "from rematbench import files, results; "
                f"doc = results.load('script', {results!r}); "
                f"files.write_json({out!r}, {{}})")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(
                r.stderr, f"script: {out}: is one of the inputs "
                f"({results}); it would be replaced\n")
            with open(results) as f:
                self.assertEqual(f.read(), before)
        self.assertEqual(self.temporaries(), [])

    def test_a_file_size_limit_is_one_line_and_leaves_no_temporary(self):
        results = os.path.join(self.dir, "r.json")
        cli("sweep", "--graphs", "chain:n=6", "--algorithms", "noremat",
            "--budgets", "2", "--threads", "1", "-o", results, ok=(0,))
        r = self.run_python(
            "from rematbench import files, results; "
            f"results.load('script', {results!r}); "
            "files.write_text('big.txt', 'x' * 100000)", limit=4096)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr,
                         "script: big.txt: write failed (File too large)\n")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "big.txt")))
        self.assertEqual(self.temporaries(), [])

    def test_plot_file_names_never_collide_between_graphs(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "plot_tradeoff", os.path.join(SOURCE, "scripts", "plot_tradeoff.py"))
        try:
            plot = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(plot)
        except ImportError as e:
            self.skipTest(f"plot_tradeoff needs {e.name}")
        names = ["a/b", "a_b", "a b", "a_b-2", "chain:n=6", "///"]
        stems = plot.file_stems(names)
        self.assertEqual(len(set(stems)), len(names), stems)
        self.assertEqual(stems[0], "a_b")
        self.assertEqual(stems[4], "chain_n=6")


class StrictScripts(unittest.TestCase):
    """The results scripts' readers and options: a key twice in one
    object of a results file and numbers that are not finite are refused
    with exit status 2, as the CLI refuses them."""

    def script(self, name, *args):
        return subprocess.run(
            [sys.executable, os.path.join(SOURCE, "scripts", name), *args],
            capture_output=True, text=True, timeout=120)

    def test_a_key_twice_in_a_results_file_is_refused(self):
        results = os.path.join(TMP, "strict_r.json")
        cli("sweep", "--graphs", "chain:n=6", "--algorithms", "noremat",
            "--budgets", "2", "--threads", "1", "-o", results, ok=(0,))
        with open(results) as f:
            text = f.read()
        twice = write("twice.json", text.replace(
            '"format": "rematbench-results"',
            '"format": "rematbench-results", "format": "other"', 1))
        r = self.script("same_figures.py", twice, results)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("the key 'format' twice in one object", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)

    def test_numeric_options_refuse_nan_and_inf(self):
        for name, option in (("compare_curves.py", "--tolerance"),
                             ("plot_tradeoff.py", "--max-overhead"),
                             ("report.py", "--max-overhead"),
                             ("replay_sweep.py", "--timeout"),
                             ("sweep_scaling.py", "--timeout")):
            for value in ("nan", "inf", "-1"):
                r = self.script(name, "x.json", "y.json", f"{option}={value}")
                self.assertEqual(r.returncode, 2, (name, value, r.stderr))
                self.assertIn(f"argument {option}: '{value}' is not a finite "
                              "number", r.stderr, (name, r.stderr))


class OneLineErrors(unittest.TestCase):
    """Arguments the CLI would refuse in one line are refused so by the
    module: paths as os.PathLike, ints beyond C's range, messages that
    quote newlines."""

    def test_paths_may_be_path_objects(self):
        import pathlib
        g = rb.load_graph(pathlib.Path(DIAMOND))
        self.assertEqual(len(g), len(rb.load_graph(DIAMOND)))
        schedule = rb.solve(DIAMOND, "noremat").schedule
        path = pathlib.Path(write("path_schedule.txt", schedule.to_text()))
        self.assertEqual(len(rb.read_schedule(path, g)), len(schedule))
        self.assertTrue(rb.validate(pathlib.Path(DIAMOND), path)["valid"])
        with self.assertRaises(TypeError) as e:
            rb.load_graph(3)
        self.assertEqual(str(e.exception),
                         "spec must be a str or an os.PathLike, not int")

    def test_ints_beyond_range_are_one_line(self):
        for kwargs, message in (
                ({"budgets": 10**20}, "sweep: budgets: must be in [1, "),
                ({"threads": -10**30}, "sweep: threads: must be in [0, ")):
            with self.assertRaises(rb.Error) as e:
                rb.sweep(["chain:n=4"], ["noremat"], **kwargs)
            self.assertIn(message, str(e.exception))
            self.assertNotIn("\n", str(e.exception))

    def test_messages_have_no_raw_newlines(self):
        for spec in ("chain:n=4\nx", "no\nsuch\rfile.json"):
            with self.assertRaises(rb.Error) as e:
                rb.load_graph(spec)
            self.assertNotIn("\n", str(e.exception))
            self.assertNotIn("\r", str(e.exception))
            self.assertIn("\\x0a", str(e.exception))


if __name__ == "__main__":
    unittest.main()
