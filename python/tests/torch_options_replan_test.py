"""bench/studies/torch_options_replan.py's verdicts on inline rows whose
answers are known (the noise is the median of the two traces' differences
per model), and its one line on a file of another format."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.environ.get("REMAT_SOURCE_DIR", os.path.join(
    os.path.dirname(__file__), "..", "..")), "bench", "studies",
    "torch_options_replan.py")


@pytest.fixture(scope="module")
def replan():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("replan", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(model, old, new, again, peak=90, budget=100, algorithm="dtr"):
    return {"model": model, "budget_bytes": budget, "old_overhead": old,
            "new_algorithm": algorithm, "new_overhead": new,
            "new_peak_bytes": peak, "repeat_algorithm": algorithm,
            "repeat_overhead": again}


def test_verdicts_against_twice_the_noise(replan):
    # Model a: differences between the traces 0.01, 0.03, 0.02 -> noise
    # 0.02; a row is worse or better past 2 x 0.02.
    rows = replan.verdicts([
        row("a", 1.00, 1.03, 1.04),    # +0.03 < 0.04: same
        row("a", 1.00, 1.05, 1.02),    # +0.05 > 0.04: worse
        row("a", 1.20, 1.10, 1.12),    # -0.10 < -0.04: better
        # Model b: no noise, so the floor of 0.5% holds.
        row("b", 1.00, 1.004, 1.004),  # same
        row("b", 1.00, 1.006, 1.006),  # worse
        row("b", 1.00, 1.0, 1.0, peak=101),  # over the budget
        row("b", 1.00, None, None, algorithm=None),  # fits nothing now
    ])
    assert [r["verdict"] for r in rows] == [
        "same", "worse", "better", "same", "worse", "over", "no plan"]
    assert rows[0]["noise"] == pytest.approx(0.02)
    assert rows[3]["noise"] == 0


def test_another_format_is_one_line(tmp_path):
    src = tmp_path / "sweep.json"
    src.write_text(json.dumps({"format": "rematbench-results"}))
    r = subprocess.run([sys.executable, BENCH, str(src), "-o",
                        str(tmp_path / "out")], capture_output=True,
                       text=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1
    assert "not rematbench-torch-options" in r.stderr
    assert not (tmp_path / "out.json").exists()


def test_same_trace_against_the_algorithm_that_won_then(replan):
    """Worse only past the settled margin (0.1%) over the old algorithm's
    schedule on the same op times; '-' where either fits nothing."""
    def same(new, then_now, algorithm="dtr"):
        return replan.same_trace({"new_algorithm": algorithm,
                                  "new_overhead": new,
                                  "old_algorithm_now": then_now})
    assert same(1.10, 1.10) == "no worse"
    assert same(1.05, 1.10) == "no worse"
    assert same(1.1010, 1.10) == "no worse"   # within 1.001 x 1.10
    assert same(1.1012, 1.10) == "worse"
    assert same(1.10, None) == "-"
    assert same(None, 1.10, algorithm=None) == "-"
