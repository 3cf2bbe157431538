"""bench/studies/moccasin_scale.py's reading of its options (no solve is
run)."""

import importlib.util
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.environ.get("REMAT_SOURCE_DIR", os.path.join(
    os.path.dirname(__file__), "..", "..")), "bench", "studies")


def load():
    spec = importlib.util.spec_from_file_location(
        "moccasin_scale", os.path.join(BENCH, "moccasin_scale.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("text, specs", [
    ("moccasin:solver=cpsat,moccasin,checkmate_milp",
     ["moccasin:solver=cpsat", "moccasin", "checkmate_milp"]),
    # A spec's second parameter stays with it, with or without ';'.
    ("checkmate_milp:solver=highs,threads=2",
     ["checkmate_milp:solver=highs,threads=2"]),
    ("moccasin:solver=cpsat,threads=2;checkmate_milp:threads=2",
     ["moccasin:solver=cpsat,threads=2", "checkmate_milp:threads=2"]),
    ("dtr,,reach_search:memory_mib=1024,drop_recomputes=false",
     ["dtr", "reach_search:memory_mib=1024,drop_recomputes=false"]),
])
def test_solver_specs(text, specs):
    assert load().solver_specs(text) == specs


def test_parameter_with_no_algorithm_is_one_line_and_status_2(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(BENCH,
                                                     "moccasin_scale.py"),
                        "--solvers", "threads=2", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "threads=2" in r.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("bound, shown", [(0, None), (None, None),
                                          (4000, 4000)])
def test_class_bound_zero_is_none(bound, shown):
    assert load().class_bound({"lower_bound_cost": bound}) == shown
