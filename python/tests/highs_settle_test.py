"""bench/studies/highs_settle.py: one row per point with the model's size,
the warm start and HiGHS's report, its bounds checked against the optimum
remat's rotor finds (exact on chains): on a point HiGHS proves at once,
and on one it cannot prove in its time limit (dual bound below the
primal)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import require_modules

require_modules("highsbox")

SOURCE = os.environ.get("REMAT_SOURCE_DIR", os.path.join(
    os.path.dirname(__file__), "..", ".."))
REMAT = os.environ.get("REMAT_BINARY", os.path.join(SOURCE, "build", "remat"))
TOOLS = os.path.join(os.path.dirname(REMAT), "bench", "micro",
                     "staged_milp_files")


def settle(*points):
    return subprocess.run([sys.executable,
                           os.path.join(SOURCE, "bench", "studies",
                                        "highs_settle.py"),
                           "--tools", TOOLS, *points],
                          capture_output=True, text=True, timeout=120)


def optimum(graph, budget):
    """(cost of the cheapest schedule, base cost) of `graph` at `budget`,
    from `remat solve -a rotor`: the units of the staged MILP's objective
    on unit-cost chains."""
    r = subprocess.run([REMAT, "solve", "-a", "rotor", "-g", graph, "-b",
                        budget, "--json"], capture_output=True, text=True,
                       timeout=60, check=True)
    doc = json.loads(r.stdout)
    return doc["cost"], doc["base_cost"]


def test_one_row_per_point():
    # chain:n=4 at 100 B, above its NoRemat peak: the warm start computes
    # each node once, which is optimal, and HiGHS proves it at its root.
    # chain:n=40 at 10 B: the warm start (revolve) is optimal, but HiGHS
    # does not prove it in 3 s (with 20 s its dual bound was still 112,
    # 1 below; 81 after 1 s, the base cost).
    r = settle("chain:n=4@100@10", "chain:n=40@10@3")
    assert r.returncode == 0, r.stderr
    header, rule, proven, open_ = r.stdout.strip().split("\n")
    assert header.startswith("| graph | budget | nonzeros | start | primal "
                             "| dual | gap |")
    rows = []
    for row in (proven, open_):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert int(cells[2]) > 0  # nonzeros
        start = float(cells[3].split()[1])
        primal, dual = float(cells[4]), float(cells[5])
        assert cells[6].endswith("%")
        rows.append((cells[:2], start, primal, dual, float(cells[6][:-1])))
    (where, start, primal, dual, gap) = rows[0]
    best, base = optimum("chain:n=4", "100")
    assert where == ["chain:n=4", "100"]
    assert start == primal == dual == best == base and gap == 0
    (where, start, primal, dual, gap) = rows[1]
    best, base = optimum("chain:n=40", "10")
    assert where == ["chain:n=40", "10"] and (best, base) == (113, 81)
    assert start == primal == best  # a bound above the optimum: found
    assert base <= dual < best  # below it: not proven
    assert gap == pytest.approx(100 * (primal - dual) / primal, abs=0.01)


@pytest.mark.parametrize("point", ["chain:n=4@100", "chain:n=4",
                                   "nosuch:n=4@100@10"])
def test_malformed_point_is_one_line_and_status_2(point):
    r = settle(point)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and point in r.stderr
