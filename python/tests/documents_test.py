"""The solve and validate records are the same document from both front
doors (run by ctest as python.documents: against the installed package;
REMAT_BINARY is the remat CLI).

`remat solve --json` and rematbench.solve(...).json, `remat validate --json`
and rematbench.validate(...) on the same inputs are compared field for
field and in the same order. The only field left out is
TIMING_FIELDS: a solve's own wall-clock time, which differs between any two
runs.
"""

import json
import os
import subprocess
import tempfile
import unittest

import rematbench as rb

REMAT = os.environ["REMAT_BINARY"]
TMP = tempfile.mkdtemp(prefix="documents_test.")

TIMING_FIELDS = ("solve_seconds",)

CHAIN = "chain:n=16"
# Costs in FLOPs, so that a transfer's time depends on the link.
RESNET = "resnet:depth=18,batch=8,image=64"
# vDNN moving every forward value: a schedule full of offloads and
# prefetches, whose makespan and stall depend on the timing options.
OFFLOADING = ("vdnn", ["policy=all"])

# The timing options as the CLI's arguments and as the keyword arguments
# of rematbench.solve and rematbench.validate: a slower link than the
# default (pcie4) and a faster compute (the default is 50e12 FLOP/s), so
# that each transfer takes more of the graph's cost units.
SLOW_LINK_ARGS = ["--link", "pcie3", "--compute-rate", "100e12",
                  "--host-budget", "1GiB"]
SLOW_LINK_KWARGS = {"link": "pcie3", "compute_rate": 100e12,
                    "host_budget": "1GiB"}


def cli_json(*args):
    r = subprocess.run([REMAT, *args, "--json"], capture_output=True,
                       text=True)
    if r.returncode not in (0, 1):
        raise AssertionError(f"remat {' '.join(args)}: exit {r.returncode}: "
                             f"{r.stderr}")
    return json.loads(r.stdout)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class SameDocuments(unittest.TestCase):

    def assert_same_document(self, module_doc, cli_doc, what):
        """Equal field for field and in the CLI's order, TIMING_FIELDS
        aside (each must be there on both sides)."""
        for field in TIMING_FIELDS:
            if field in cli_doc:
                self.assertIn(field, module_doc, what)
        def drop(doc):
            return {k: v for k, v in doc.items() if k not in TIMING_FIELDS}
        self.assertEqual(drop(module_doc), drop(cli_doc), what)
        self.assertEqual(list(module_doc), list(cli_doc), what)

    def solve_both(self, algorithm, graph, budget=None, params=(),
                   timing_args=(), timing_kwargs=None):
        args = ["solve", "-a", algorithm, "-g", graph, "--timeout", "30",
                *timing_args]
        if budget is not None:
            args += ["-b", budget]
        for param in params:
            args += ["-p", param]
        want = cli_json(*args)
        got = rb.solve(graph, algorithm, budget=budget, params=list(params),
                       timeout=30, **(timing_kwargs or {})).json
        self.assert_same_document(got, want, args)
        return got

    def validate_both(self, schedule_path, graph, budget=None,
                      timing_args=(), timing_kwargs=None):
        args = ["validate", "-g", graph, "-s", schedule_path, *timing_args]
        if budget is not None:
            args += ["-b", budget]
        want = cli_json(*args)
        got = rb.validate(graph, schedule_path, budget=budget,
                          **(timing_kwargs or {}))
        self.assert_same_document(got, want, args)
        return got

    def test_solve(self):
        self.solve_both("noremat", CHAIN)               # unbounded budget
        self.solve_both("revolve", CHAIN, "6")
        self.solve_both("revolve", CHAIN, "2")          # infeasible: nulls
        self.solve_both("checkmate_milp", CHAIN, "8")   # optimal, details
        self.solve_both("exact_search", "chain:n=8", "5")  # lower_bound_cost

    def test_solve_with_timing_options(self):
        algorithm, params = OFFLOADING
        slow = self.solve_both(algorithm, RESNET, None, params,
                               SLOW_LINK_ARGS, SLOW_LINK_KWARGS)
        default = self.solve_both(algorithm, RESNET, None, params)
        self.assertGreater(slow["transfer_bytes"], 0)
        # The options reach the simulation: a slower link, a longer run.
        self.assertGreater(slow["makespan"], default["makespan"])

    def test_validate_valid_schedule(self):
        schedule = rb.solve(CHAIN, "checkpoint_last", budget=3).schedule
        path = write("valid.txt", schedule.to_text())
        doc = self.validate_both(path, CHAIN, "3")
        self.assertEqual((doc["valid"], doc["error"], doc["fits_budget"]),
                         (True, None, True))
        self.validate_both(path, CHAIN, "2")  # valid, over the budget

    def test_validate_invalid_schedule_names_its_line(self):
        # Node 2 before its input 1, on line 4 after a comment and a blank
        # line: event index 1, line 4.
        path = write("invalid.txt", "# made by hand\nc 0\n\nc 2\n")
        doc = self.validate_both(path, CHAIN, "8")
        self.assertFalse(doc["valid"])
        self.assertEqual((doc["error"]["event"], doc["error"]["line"]),
                         (1, 4))
        # A schedule that ends before the targets: the line after its last.
        path = write("short.txt", "c 0\nc 1\n")
        doc = self.validate_both(path, CHAIN)
        self.assertEqual((doc["error"]["event"], doc["error"]["line"]),
                         (2, 3))

    def test_validate_with_timing_options(self):
        algorithm, params = OFFLOADING
        schedule = rb.solve(RESNET, algorithm, params=params).schedule
        path = write("offloading.txt", schedule.to_text())
        slow = self.validate_both(path, RESNET, None, SLOW_LINK_ARGS,
                                  SLOW_LINK_KWARGS)
        default = self.validate_both(path, RESNET)
        self.assertGreater(slow["transfer_bytes"], 0)
        self.assertGreater(slow["makespan"], default["makespan"])

    def test_validate_schedule_object_has_no_file_line(self):
        """A Schedule made in memory has no file: the document's schedule
        and error.line are None, the rest as for its file."""
        bad = rb.Schedule([("c", 0), ("c", 2)])
        from_object = rb.validate(CHAIN, bad)
        from_file = rb.validate(CHAIN, write("bad.txt", bad.to_text()))
        self.assertEqual((from_object["schedule"],
                          from_object["error"]["line"]), (None, None))
        self.assertEqual(from_file["error"]["line"], 2)
        from_file["schedule"] = None
        from_file["error"]["line"] = None
        self.assertEqual(from_object, from_file)


if __name__ == "__main__":
    unittest.main()
