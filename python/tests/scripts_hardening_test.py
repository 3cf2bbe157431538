"""The Python scripts under scripts/ and bench/studies/ as the CLI is
hardened: numeric options refuse nan, inf and values that mean nothing
(argparse's one line, exit 2); a failed write to stdout is one line and
exit 2; names read from a results file reach the terminal escaped; the
report writer refuses an address-space limit its Vega compiler cannot start
under, and its memory follows what it draws, not the file; results files
are read a piece at a time as strictly as json.load reads them.

Run with pytest (REMAT_BINARY is the remat CLI, REMAT_SOURCE_DIR the
source tree)."""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from rematbench import results, script

REMAT = os.environ["REMAT_BINARY"]
SOURCE = os.environ["REMAT_SOURCE_DIR"]
EVIL = "g\x1b[31mred\nline"


def run(args, stdout=subprocess.PIPE, shell=False, timeout=120):
    return subprocess.run(args, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, shell=shell, timeout=timeout)


def path_of(name):
    for folder in ("scripts", os.path.join("bench", "studies")):
        path = os.path.join(SOURCE, folder, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(name)


def py(name, *args, **kw):
    return run([sys.executable, path_of(name), *args], **kw)


class Scripts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="scripts_hardening.")
        cls.sweep = os.path.join(cls.tmp, "r.json")
        subprocess.run([REMAT, "sweep", "--graphs", "chain:n=6",
                        "--algorithms", "noremat,checkpoint_last",
                        "--budgets", "3", "--threads", "1", "-o", cls.sweep],
                       check=True, capture_output=True)
        with open(cls.sweep) as f:
            doc = json.load(f)
        doc["graphs"][0]["name"] = EVIL
        for r in doc["runs"]:
            r["graph"] = EVIL
        # A solve past the time limit: method_strength names it.
        doc["runs"][0]["points"][0]["solve_seconds"] = 1e4
        cls.evil = cls.write("evil.json", doc)
        doc["runs"][0]["points"][0]["cost"] = 999
        doc["graphs"][0]["nodes"] += 1
        cls.evil2 = cls.write("evil2.json", doc)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def write(cls, name, doc):
        path = os.path.join(cls.tmp, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def listing(self):
        return sorted(os.listdir(self.tmp))

    def test_numeric_options_refuse_what_means_nothing(self):
        # Before: type=float and type=int took nan, inf and negatives (a
        # report_check that never waits, a sweep of -1 budgets).
        before = self.listing()
        out = os.path.join(self.tmp, "never")
        cases = [
            ("report_check.py", ["x.html"], "--timeout", "nan",
             "a finite number > 0"),
            ("report_check.py", ["x.html"], "--timeout", "inf",
             "a finite number > 0"),
            ("report_check.py", ["x.html"], "--timeout", "-1",
             "a finite number > 0"),
            ("report_check.py", ["x.html"], "--runs", "0",
             "an integer >= 1"),
            ("plot_tradeoff.py", [self.sweep, "--out", out], "--jobs", "-2",
             "an integer >= 1"),
            ("sweep_scaling.py", ["--out", out], "--tasks", "1e3",
             "an integer >= 1"),
            ("kusumoto_dp_grid.py", ["--out", out], "--budgets", "-1",
             "an integer >= 1"),
            ("kusumoto_authors.py", ["--authors", out, "--out", out],
             "--repeat", "0", "an integer >= 1"),
            ("wide_graphs.py", [], "--leaves", "0", "an integer >= 1"),
            ("main_job.py", ["--out", out], "--timeout", "nan",
             "a finite number > 0"),
            ("build_time.py", ["--old", "HEAD", "--out", out], "--tests",
             "-1", "an integer >= 0"),
            ("solver_choice.py", ["--out", out], "--fractions", "0.5,inf",
             "a comma-separated list of finite numbers > 0"),
        ]
        for name, args, option, value, what in cases:
            r = py(name, *args, f"{option}={value}")
            self.assertEqual(r.returncode, 2, (name, value, r.stderr))
            last = r.stderr.splitlines()[-1]
            self.assertTrue(last.endswith(
                f"error: argument {option}: {value!r} is not {what}"),
                (name, r.stderr))
            self.assertEqual(r.stdout, "")
        self.assertEqual(self.listing(), before)

    def test_positional_numbers_and_files_of_cpsat_mps(self):
        # Before: sys.argv[1:5] went unchecked: nan seconds reached CP-SAT,
        # a missing file or argument ended in a traceback.
        missing = os.path.join(self.tmp, "x.mps")
        cases = [([missing, "-", "1", "1"],
                  f"error: {missing}: not a readable file"),
                 ([self.sweep, "-", "nan", "1"],
                  "error: argument seconds: 'nan' is not a finite number > 0"),
                 ([self.sweep, "-", "5", "0"],
                  "error: argument threads: '0' is not an integer >= 1"),
                 ([self.sweep], "error: the following arguments are "
                  "required: start, seconds, threads")]
        for args, message in cases:
            r = py("cpsat_mps.py", *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertTrue(r.stderr.splitlines()[-1].endswith(message),
                            (args, r.stderr))
            self.assertEqual(r.stdout, "")

    def test_plot_labels_are_drawn_as_written(self):
        # Before: a parameter value with two `$` was parsed as mathtext, and
        # the parser's error ended the plot as "malformed results".
        with open(self.sweep) as f:
            doc = json.load(f)
        doc["runs"][0]["params"] = {"k": "$x^{$"}
        out = os.path.join(self.tmp, "dollars")
        r = py("plot_tradeoff.py", self.write("dollars.json", doc),
               "--out", out, "--jobs", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(out)),
                         ["chain_n=6.pdf", "chain_n=6.png"])

    def test_a_failed_stdout_is_one_line_and_exit_2(self):
        # Before: exit 120 with Python's "Exception ignored ... OSError"
        # lines, or a traceback with exit 1 once the buffer filled.
        cases = [("compare_curves.py", self.sweep, self.sweep),
                 ("same_figures.py", self.sweep, self.sweep),
                 ("method_strength.py", self.sweep)]
        for name, *args in cases:
            prog = name[:-3]
            with open("/dev/full", "w") as full:
                r = py(name, *args, stdout=full)
            self.assertEqual((r.returncode, r.stderr),
                             (2, f"{prog}: stdout: write failed (No space "
                              "left on device)\n"), name)
            # A pipe whose reader is gone (compare_curves and method_strength
            # end quietly on SIGPIPE, as under `| head`), and no stdout.
            read, write = os.pipe()
            os.close(read)
            with os.fdopen(write, "w") as pipe:
                r = py(name, *args, stdout=pipe)
            self.assertEqual((r.returncode, r.stderr),
                             (2, f"{prog}: stdout: write failed (Broken "
                              "pipe)\n") if name == "same_figures.py"
                             else (-13, ""), name)
            r = run(f"'{sys.executable}' '{path_of(name)}' "
                    + " ".join(f"'{a}'" for a in args) + " >&-", shell=True)
            self.assertEqual((r.returncode, r.stderr),
                             (2, f"{prog}: stdout: write failed (Bad file "
                              "descriptor)\n"), name)
        # What was written beside stdout stays whole.
        md = os.path.join(self.tmp, "strength.md")
        with open("/dev/full", "w") as full:
            r = py("method_strength.py", self.sweep, "--out", md, stdout=full)
        self.assertEqual(r.returncode, 2, r.stderr)
        with open(md) as f:
            self.assertIn("Sweep: 1 graphs", f.read())
        os.unlink(md)

    def test_names_from_files_reach_the_terminal_escaped(self):
        # Before: the escape sequence and the newline went out raw.
        shown = "g\\x1b[31mred\\x0aline"
        for name, *args in (
                ("compare_curves.py", self.evil, self.evil2, "--check",
                 "all"),
                ("same_figures.py", self.evil, self.evil2),
                ("method_strength.py", self.evil)):
            r = py(name, *args)
            self.assertIn(r.returncode, (0, 1), (name, r.stderr))
            self.assertNotIn("\x1b", r.stdout + r.stderr, name)
            self.assertNotIn("red\nline", r.stdout + r.stderr, name)
            self.assertIn(shown, r.stdout, (name, r.stdout))

    def test_shown_escapes_as_the_cli_does(self):
        self.assertEqual(script.shown("a\x1b[1m\n\x7f\u009b\udcffé✓"),
                         "a\\x1b[1m\\x0a\\x7f\\xc2\\x9b\\xffé✓")


class Reader(unittest.TestCase):
    """results.load reads a piece at a time: what json.load took, it takes
    the same; what it refused, it refuses."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="scripts_reader.")
        self.sweep = os.path.join(self.tmp, "r.json")
        subprocess.run([REMAT, "sweep", "--graphs", "chain:n=6",
                        "--algorithms", "noremat,revolve", "--budgets", "3",
                        "--threads", "1", "-o", self.sweep],
                       check=True, capture_output=True)
        with open(self.sweep) as f:
            self.text = f.read()
        self.piece = results._PIECE

    def tearDown(self):
        results._PIECE = self.piece
        shutil.rmtree(self.tmp)

    def read(self, text):
        return results._Reader(io.StringIO(text)).document(lambda r: r)

    def test_same_document_in_pieces_of_any_size(self):
        whole = json.loads(self.text)
        for piece in (1, 2, 7, 1 << 20):
            results._PIECE = piece
            self.assertEqual(self.read(self.text), whole, piece)
        kept = results.load("t", self.sweep, lambda p: p["status"])
        self.assertEqual([r["points"] for r in kept["runs"]],
                         [[p["status"] for p in r["points"]]
                          for r in whole["runs"]])

    def test_a_number_cut_by_a_piece_boundary(self):
        # A piece that ended after "1e" of "1e-05" gave the decoder "1"
        # alone and refused the rest (found by scripts/fuzz_results_reader.py).
        text = '{"runs": [{"points": [{"s": 1e-05, "t": -2.5E+3}]}], "n": 7}'
        for piece in range(1, len(text) + 1):
            results._PIECE = piece
            self.assertEqual(self.read(text), json.loads(text), piece)
        for text in ("1e4001", "-0.5e-7"):
            results._PIECE = 1
            self.assertEqual(self.read(text), json.loads(text))

    def test_what_json_refuses_is_refused(self):
        results._PIECE = 5
        for text in (self.text + "\0", self.text + "{}",
                     self.text[:-3], self.text.replace("[", "[,", 1),
                     self.text.replace('"runs": [', '"runs": [1 2, ', 1),
                     '{"format": 1, "format": 2}', '{"a": 1,}', "{", ""):
            with self.assertRaises(ValueError, msg=text[-40:]):
                json.loads(text, object_pairs_hook=results._unique_keys)
            with self.assertRaises(ValueError, msg=text[-40:]):
                self.read(text)


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            import vl_convert  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("vl_convert is missing")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="scripts_report.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def report(self, results_path, out, limit=None):
        """report.py's exit status, stderr and peak RSS (KiB)."""
        command = (f"'{sys.executable}' '{path_of('report.py')}' "
                   f"'{results_path}' -o '{out}' --remat '{REMAT}'")
        if limit:
            command = f"ulimit -v {limit}; {command}"
        measure = ("import resource, subprocess, sys; "
                   "r = subprocess.run(sys.argv[1], shell=True); "
                   "print(r.returncode, resource.getrusage("
                   "resource.RUSAGE_CHILDREN).ru_maxrss)")
        r = run([sys.executable, "-c", measure, command], timeout=300)
        status, peak = map(int, r.stdout.split()[-2:])
        return status, r.stderr, peak

    def test_an_address_space_limit_is_refused_in_one_line(self):
        # Before: V8 aborted the process (SIGTRAP) with a stack dump.
        sweep = os.path.join(self.tmp, "r.json")
        subprocess.run([REMAT, "sweep", "--graphs", "chain:n=6",
                        "--algorithms", "noremat", "--budgets", "2",
                        "--threads", "1", "-o", sweep], check=True,
                       capture_output=True)
        out = os.path.join(self.tmp, "r.html")
        status, err, _ = self.report(sweep, out, limit=4000000)
        self.assertEqual(status, 2, err)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("report: the Vega compiler (vl_convert's V8) cannot "
                      "start under the address-space limit of 4000000 KiB "
                      "(ulimit -v)", err)
        self.assertEqual(sorted(os.listdir(self.tmp)),
                         ["r.json", "r.json.journal"])

    def test_memory_follows_what_is_drawn_not_the_file(self):
        # 2,000 points that carry 40 kB of details each (an 80 MB file),
        # of which the report shows 240 characters: the whole document was
        # held, 92 MB more at the peak than for the same points without
        # the details; read a point at a time, 9 MB more.
        graph = {"name": "g", "nodes": 3, "edges": 2, "base_cost": 10,
                 "static_bytes": 0, "lower_bound_bytes": 10,
                 "noremat_peak_bytes": 2010, "longest_path_cost": 10,
                 "content_hash": "0"}

        def doc(blob):
            points = [{"budget_bytes": 10 + b, "status": "feasible",
                       "valid": True, "peak_bytes": 10, "cost": 10,
                       "overhead": 1.0, "makespan": 10.0,
                       "solve_seconds": 0.0, "details": {"blob": blob}}
                      for b in range(2000)]
            return {"format": "rematbench-results", "version": 1,
                    "context": {}, "graphs": [graph],
                    "runs": [{"graph": "g", "algorithm": "noremat",
                              "params": {}, "points": points}]}
        peaks = []
        for name, blob in (("small", "x"), ("large", "x" * 40000)):
            path = os.path.join(self.tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(doc(blob), f)
            status, err, peak = self.report(
                path, os.path.join(self.tmp, name + ".html"))
            self.assertEqual(status, 0, err)
            peaks.append(peak)
        self.assertLess(peaks[1] - peaks[0], 40 * 1024, peaks)


if __name__ == "__main__":
    unittest.main()
