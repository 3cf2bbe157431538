"""Shared by the Python tests (pytest, python/tests/*_test.py)."""

import importlib
import os
import sys

import pytest


def require_modules(*names):
    """The imported modules `names`. Where one is missing the test file is
    skipped (pytest's -rs summary says SKIPPED, which ctest reports as a
    skip), except under CI=true, where CI must run it: there it fails."""
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ImportError as e:
            why = f"{sys.executable} cannot import {name} ({e})"
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true and {why}", pytrace=False)
            pytest.skip(why, allow_module_level=True)
    return modules
