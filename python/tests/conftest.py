"""Shared by the Python tests (pytest, python/tests/*_test.py).

Skips reach ctest by exit status only (python/CMakeLists.txt sets
SKIP_RETURN_CODE 77 on the python.* tests): a run in which tests were
skipped and none ran otherwise (a module the file needs is missing) exits
77, which ctest reports as a skip; a run with any failure keeps pytest's
status, whatever else was skipped. Under CI=true, where CI must run every
test, a run with any skip fails (exit 1) instead."""

import importlib
import os
import sys

import pytest

SKIPPED = 77  # ctest's SKIP_RETURN_CODE for the python.* tests


def under_ci():
    return os.environ.get("CI") == "true"


def require_modules(*names):
    """The imported modules `names`. Where one is missing the test file is
    skipped (exit 77, which ctest reports as a skip), except under CI=true,
    where CI must run it: there it fails."""
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ImportError as e:
            why = f"{sys.executable} cannot import {name} ({e})"
            if under_ci():
                pytest.fail(f"CI=true and {why}", pytrace=False)
            pytest.skip(why, allow_module_level=True)
    return modules


_counts = {"skipped": 0, "ran": 0}


def pytest_collectreport(report):
    if report.skipped:  # a whole module skipped (require_modules)
        _counts["skipped"] += 1


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _counts["skipped"] += 1
    elif report.when == "call":
        _counts["ran"] += 1


def pytest_sessionfinish(session, exitstatus):
    if exitstatus not in (pytest.ExitCode.OK,
                          pytest.ExitCode.NO_TESTS_COLLECTED) or \
            not _counts["skipped"]:
        return
    if under_ci():
        sys.stderr.write(f"CI=true and {_counts['skipped']} skipped: "
                         "CI must run every test\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif not _counts["ran"]:
        session.exitstatus = SKIPPED
