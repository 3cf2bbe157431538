"""bench/studies/staged_never_dearer.py's verdicts on an inline sweep whose
answers are known: which heuristic point a staged point is held to, and
the exit status when one is dearer."""

import json
import os
import subprocess
import sys

BENCH = os.path.join(os.environ.get("REMAT_SOURCE_DIR", os.path.join(
    os.path.dirname(__file__), "..", "..")), "bench", "studies",
    "staged_never_dearer.py")


def point(budget, status, cost=None, peak=None, **extra):
    has = cost is not None
    return {"budget_bytes": budget, "status": status, "valid": has or None,
            "peak_bytes": peak, "cost": cost, **extra}


def sweep(staged_points):
    heuristic = [
        point(10, "feasible", 20.0, 9),
        point(20, "feasible", 12.0, 15),
        point(30, "infeasible", 11.0, 35),  # over the budget: not held to it
    ]
    offload = [point(10, "feasible", 1.0, 5, transfer_bytes=64)]
    return {"format": "rematbench-results", "graphs": [], "runs": [
        {"graph": "g", "algorithm": "dtr", "params": {}, "points": heuristic},
        {"graph": "g", "algorithm": "vdnn", "params": {}, "points": offload},
        {"graph": "g", "algorithm": "checkmate_milp", "params": {},
         "points": staged_points}]}


def run(tmp_path, doc):
    src = tmp_path / "sweep.json"
    src.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, BENCH, str(src), "-o",
                        str(tmp_path / "out")], capture_output=True,
                       text=True)
    rows = json.loads((tmp_path / "out.json").read_text())["rows"] \
        if r.returncode in (0, 1) else None
    return r, rows


def test_verdicts(tmp_path):
    r, rows = run(tmp_path, sweep([
        point(10, "feasible", 20.0, 10),   # ties dtr, the offload is cheaper
        point(20, "timeout"),              # no schedule where dtr fits
        point(30, "feasible", 14.0, 30),   # nothing else fits at 30
    ]))
    assert r.returncode == 0, r.stderr
    assert [(x["budget_bytes"], x["verdict"], x["best_heuristic"])
            for x in rows] == [
        (10, "never dearer", "dtr"),
        (20, "no answer where a heuristic fits", "dtr"),
        (30, "no heuristic fits", None)]


def test_a_dearer_staged_point_fails(tmp_path):
    r, rows = run(tmp_path, sweep([point(20, "timeout", 12.5, 20)]))
    assert r.returncode == 1
    assert rows[0]["verdict"] == "dearer"
    assert "| g | 20 | checkmate_milp | timeout | 12.5 | dtr | 12.0 |" in \
        (tmp_path / "out.md").read_text()


def test_not_a_results_file_is_one_line_and_status_2(tmp_path):
    src = tmp_path / "sweep.json"
    src.write_text("{")
    r = subprocess.run([sys.executable, BENCH, str(src), "-o",
                        str(tmp_path / "out")], capture_output=True,
                       text=True)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not os.path.exists(tmp_path / "out.json")
