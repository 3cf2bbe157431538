"""Tests of rematbench.torch.replay, scripts/replay_torch.py and
scripts/replay_sweep.py on tiny models (run by ctest as python.replay_torch:
REMAT_BINARY is the remat binary, PYTHONPATH holds scripts/). Without torch: fails under CI=true,
otherwise skipped.

- A hand-built MLP whose tensor sizes are known: the measured live-storage
  peak equals the simulated peak for NoRemat, checkpoint_last and a
  hand-made schedule that recomputes.
- Every registered algorithm on a tiny ResNet (batch norm) and a tiny
  Transformer (dropout) at two budgets: gradients bit-identical to eager.
- Bad input exits with status 2 and one line naming the file and the event
  or node, leaving no output file.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from conftest import require_modules

require_modules("torch", "torchvision", "matplotlib")

import rematbench.torch.replay as RT  # noqa: E402

REMAT = os.environ["REMAT_BINARY"]
SCRIPTS = os.path.join(os.environ.get("REMAT_SOURCE_DIR", os.path.join(
    os.path.dirname(__file__), "..", "..")), "scripts")
PY = sys.executable
TMP = tempfile.mkdtemp(prefix="replay_torch_test.")


def export(name, *opts):
    path = os.path.join(TMP, name + ".json")
    if not os.path.exists(path):
        subprocess.run([PY, os.path.join(SCRIPTS, "export_torch.py"), *opts,
                        "-o", path], check=True, capture_output=True)
    return path


def mlp():
    return export("mlp", "--model", "mlp", "--width", "8", "--depth", "2",
                  "--classes", "3", "--batch", "2")


def info(path):
    r = subprocess.run([REMAT, "graph", "info", "--json", path],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def solve(path, algorithm, budget=None):
    """(status, schedule file or None)."""
    sched = os.path.join(TMP, f"{algorithm}.{budget}.txt")
    cmd = [REMAT, "solve", "-a", algorithm, "-g", path, "--timeout", "20",
           "--json", "--schedule-out", sched]
    if budget is not None:
        cmd += ["-b", str(budget)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    status = json.loads(r.stdout)["status"]
    return status, sched if status == "feasible" else None


def schedule(path, algorithm):
    status, sched = solve(path, algorithm)
    assert status == "feasible", (algorithm, status)
    return sched


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run_replay(*args):
    return subprocess.run([PY, os.path.join(SCRIPTS, "replay_torch.py"),
                           "--repeats", "1", *args],
                          capture_output=True, text=True)


class HandBuiltMlp(unittest.TestCase):
    """Linear(8,8)-ReLU-Linear(8,8)-ReLU-Linear(8,3), batch 2, fp32."""

    @classmethod
    def setUpClass(cls):
        cls.path = mlp()
        cls.graph = RT.load_graph(cls.path)
        cls.rep = RT.Replayer(cls.path)

    def test_sizes_known_by_hand(self):
        fwd = [(n["op"].split(".")[1], n["mem"]) for n in self.graph["nodes"]
               if n["kind"] != "backward"]
        # 2 x 8 floats = 64 bytes; 2 x 3 = 24; the loss and its total
        # weight are two fp32 scalars.
        self.assertEqual(fwd, [("addmm", 64), ("relu", 64), ("addmm", 64),
                               ("relu", 64), ("addmm", 24),
                               ("_log_softmax", 24), ("nll_loss_forward", 8)])

    def check(self, sched):
        r = self.rep.replay(sched, repeats=1, warmup=0)
        self.assertEqual(r["measured_peak_bytes"], r["simulated_peak_bytes"],
                         r["event_differences"])
        self.assertEqual(r["event_differences"], [])
        self.assertTrue(r["gradients_equal"])
        self.assertTrue(r["loss_equal"])
        return r

    def test_noremat(self):
        r = self.check(schedule(self.path, "noremat"))
        self.assertEqual(r["simulated_peak_bytes"],
                         info(self.path)["noremat_peak_bytes"])
        self.assertEqual(r["predicted_overhead"], 1.0)

    def test_checkpoint_last(self):
        r = self.check(schedule(self.path, "checkpoint_last"))
        self.assertGreater(r["length"], len(self.graph["nodes"]))

    def test_hand_made_recomputation(self):
        # NoRemat, except that the first relu is freed as soon as the next
        # addmm has read it and computed again just before its next reader.
        # Its input (node 0) is kept until then.
        events, _ = RT.read_schedule(schedule(self.path, "noremat"),
                                     self.rep.core)
        relu = 1
        self.assertEqual(self.graph["nodes"][relu]["inputs"], [0])
        readers = [v for k, v, _ in events if k == "c" and
                   relu in self.graph["nodes"][v]["inputs"]]
        out = []
        for k, v, _ in events:
            if (k, v) == ("f", 0):
                continue
            if k == "c" and v == readers[1]:
                out += [("c", relu), ("f", 0)]
            out.append((k, v))
            if k == "c" and v == readers[0]:
                out.append(("f", relu))
        sched = write("mlp_recompute.txt",
                      "".join(f"{k} {v}\n" for k, v in out))
        r = self.check(sched)
        self.assertEqual(r["length"], len(self.graph["nodes"]) + 1)
        self.assertGreater(r["predicted_overhead"], 1.0)


class EveryAlgorithm(unittest.TestCase):
    """All of `remat list` at two budgets on a tiny ResNet and a tiny
    Transformer with dropout: gradients and running statistics equal."""

    def algorithms(self):
        r = subprocess.run([REMAT, "list", "--json"], capture_output=True,
                           text=True, check=True)
        return [a["name"] for a in json.loads(r.stdout)["algorithms"]]

    def sweep(self, path):
        g = info(path)
        lo, hi = g["lower_bound_bytes"], g["noremat_peak_bytes"]
        rep = RT.Replayer(path)
        replayed, refused = {}, {}
        for a in self.algorithms():
            for budget in ((lo + hi) // 2, hi):
                status, sched = solve(path, a, budget)
                if sched is None:
                    refused.setdefault(a, set()).add(status)
                    continue
                with open(sched) as f:
                    moves = any(line[:1] in "opw" for line in f if line.strip())
                if moves:  # offloading is simulated only (replay_torch.py)
                    os.unlink(sched)
                    continue
                r = rep.replay(sched, repeats=1, warmup=0)
                os.unlink(sched)
                with self.subTest(algorithm=a, budget=budget):
                    self.assertTrue(r["gradients_equal"])
                    self.assertTrue(r["buffers_equal"])
                    self.assertEqual(r["measured_peak_bytes"],
                                     r["simulated_peak_bytes"])
                replayed.setdefault(a, []).append(budget)
        return replayed, refused

    def test_resnet_and_transformer(self):
        # Without measured workspaces: on models this small the temporaries
        # inside convolutions outweigh the activations, and the chain
        # methods (sqrt(n) segments, revolve, rotor) find nothing under
        # the NoRemat peak; the replay of every algorithm is what is
        # tested here (test_measured_workspace has the workspaces).
        res, _ = self.sweep(export("resnet_tiny", "--model", "resnet_tiny",
                                "--width", "8", "--depth", "1", "--image",
                                "8", "--classes", "10", "--workspace",
                                "none"))
        tr, refused = self.sweep(export("transformer", "--model", "transformer",
                               "--layers", "1", "--d-model", "8", "--heads",
                               "2", "--ffn", "16", "--seq", "4", "--classes",
                               "5", "--dropout", "0.1", "--workspace",
                               "none"))
        # Every algorithm gave a schedule on the ResNet; on the Transformer
        # (178 nodes) the exact and Checkmate solvers refuse the size and
        # the Kusumoto DPs its attention's backward (a backward node that
        # reads a value that is not a gradient): never infeasible or error.
        self.assertEqual(sorted(res), sorted(self.algorithms()))
        for a in self.algorithms():
            if a not in tr:
                self.assertLessEqual(refused[a], {"too_large", "unsupported"},
                                     a)


    def test_measured_workspace(self):
        """With each op's workspace measured, the replayer's peak (live
        storages plus the workspace of the op running) is the simulated
        one for every schedule that fits."""
        path = export("resnet_ws", "--model", "resnet_tiny", "--width", "8",
                      "--depth", "1", "--image", "8", "--classes", "10")
        with open(path) as f:
            nodes = json.load(f)["nodes"]
        convs = [n for n in nodes if n["op"] == "aten.convolution.default"]
        self.assertTrue(all(n.get("workspace", 0) > 0 for n in convs))
        res, _ = self.sweep(path)
        self.assertGreaterEqual(len(res), len(self.algorithms()) // 2)


class BadInput(unittest.TestCase):

    def assertOneLine(self, r, *words):
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        for w in words:
            self.assertIn(w, lines[0])

    def test_compute_before_inputs(self):
        sched = write("early.txt", "# bad\nc 2\n")
        out = os.path.join(TMP, "early.json")
        r = run_replay(mlp(), sched, "-o", out)
        self.assertOneLine(r, sched + ":2", "compute 2", "not live")
        self.assertFalse(os.path.exists(out))

    def test_schedule_of_another_graph(self):
        other = export("resnet_tiny", "--model", "resnet_tiny", "--width",
                       "8", "--depth", "1", "--image", "8", "--classes",
                       "10")
        sched = schedule(other, "noremat")
        r = run_replay(mlp(), sched)
        self.assertOneLine(r, sched + ":")

    def test_model_cannot_be_rebuilt(self):
        g = RT.load_graph(mlp())
        g["provenance"]["model_args"]["width"] = 9
        path = write("mlp_w9.json", json.dumps(g))
        r = run_replay(path, "-a", "noremat")
        self.assertOneLine(r, path, "node 0", "differs")
        g["provenance"]["model_args"]["model"] = "no_such_model"
        path = write("mlp_unknown.json", json.dumps(g))
        r = run_replay(path, "-a", "noremat")
        self.assertOneLine(r, path, "cannot rebuild")

    def test_usage(self):
        r = run_replay(mlp())
        self.assertEqual(r.returncode, 2)


class Sweep(unittest.TestCase):

    def test_replay_sweep(self):
        d = tempfile.mkdtemp(dir=TMP)
        results = os.path.join(d, "sweep.json")
        r = subprocess.run(
            [PY, os.path.join(SCRIPTS, "replay_sweep.py"), results,
             "--sweep", mlp(), "--budgets", "2", "--remat", REMAT,
             "--repeats", "1", "--measured-costs", "--cost-repeats", "1"],
            capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "replay.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], "rematbench-replay-results")
        s = doc["summary"]
        self.assertGreater(s["points"], 4)
        self.assertEqual(s["gradients_equal"], s["points"])
        self.assertEqual(s["peak_equal"], s["points"])
        for p in doc["points"]:
            self.assertIsNotNone(p["predicted_overhead_measured_costs"])
            # The measurement record's keys (results/SCHEMA.md).
            for k in ("measured_peak_bytes", "step_seconds",
                      "baseline_seconds", "ratio_to_baseline",
                      "baseline_cpu_seconds", "ratio_to_baseline_cpu",
                      "max_grad_diff"):
                self.assertIsNotNone(p[k], k)
        for f in ("peak.png", "overhead.png", "cost_model.md"):
            self.assertTrue(os.path.getsize(os.path.join(d, f)) > 0, f)


if __name__ == "__main__":
    unittest.main()
