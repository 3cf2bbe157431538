"""bench/studies/highs_settle.py on a model HiGHS proves at once: one row
with the model's size, the warm start and HiGHS's report."""

import os
import subprocess
import sys

import pytest

from conftest import require_modules

require_modules("highsbox")

SOURCE = os.environ.get("REMAT_SOURCE_DIR", os.path.join(
    os.path.dirname(__file__), "..", ".."))
TOOLS = os.path.join(os.path.dirname(os.environ.get(
    "REMAT_BINARY", os.path.join(SOURCE, "build", "remat"))), "bench",
    "micro", "staged_milp_files")


def settle(*points):
    return subprocess.run([sys.executable,
                           os.path.join(SOURCE, "bench", "studies",
                                        "highs_settle.py"),
                           "--tools", TOOLS, *points],
                          capture_output=True, text=True, timeout=120)


def test_one_row_per_point():
    # Above chain:n=4's NoRemat peak the warm start computes each node
    # once, which is optimal, and HiGHS proves it at its root.
    r = settle("chain:n=4@100@10")
    assert r.returncode == 0, r.stderr
    header, rule, row = r.stdout.strip().split("\n")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "chain:n=4" and cells[1] == "100"
    assert int(cells[2]) > 0  # nonzeros
    assert cells[4] == cells[5]  # primal bound = dual bound: proven
    assert cells[6] == "0%"


@pytest.mark.parametrize("point", ["chain:n=4@100", "chain:n=4",
                                   "nosuch:n=4@100@10"])
def test_malformed_point_is_one_line_and_status_2(point):
    r = settle(point)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and point in r.stderr
