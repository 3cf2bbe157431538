"""Reading a rematbench results file for the scripts that take one.

    from rematbench import results
    doc = results.load("my_script", path)   # or exit 2 with one line

Bad input is one line on stderr naming the script and the file, and exit 2:
never a traceback, never a hang on a FIFO, never exit 1 (which some scripts
keep for a real regression). Every results script reads through it.
"""
import argparse
import json
import math
import os
import sys

from rematbench import files


def bad_input(prog, message):
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(2)


def _unique_keys(pairs):
    """An object whose keys are all different: the last of two would
    silently win."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {twice!r} twice in one object")
    return doc


def _number(text, what, ok):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not ok(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def finite(text):
    """An option's number (argparse's `type`): finite; nan and inf are
    refused as the CLI's options refuse them."""
    return _number(text, "a finite number", lambda v: True)


def nonnegative(text):
    """An option's number >= 0 (argparse's `type`)."""
    return _number(text, "a finite number >= 0", lambda v: v >= 0)


def positive(text):
    """An option's number > 0 (argparse's `type`), such as a time limit."""
    return _number(text, "a finite number > 0", lambda v: v > 0)


def load(prog, path):
    """The results document at `path`, or exit 2 with one line. The file
    is noted as an input (files.note_input): no output may replace it."""
    files.note_input(path, prog)
    if not os.path.isfile(path):  # a FIFO would block, a folder is no file
        bad_input(prog, f"{path}: " + ("not a regular file"
                                       if os.path.exists(path)
                                       else "no such file"))
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f, object_pairs_hook=_unique_keys)
    except (OSError, ValueError, RecursionError) as e:
        # ValueError: JSON syntax and UnicodeDecodeError (a binary file);
        # repr and a cut keep garbage bytes off the terminal and one line.
        bad_input(prog, f"{path}: cannot read results: {str(e)[:200]!r}")
    if not isinstance(results, dict) or \
            results.get("format") != "rematbench-results" or \
            not isinstance(results.get("runs"), list) or \
            not isinstance(results.get("graphs"), list):
        bad_input(prog, f"{path}: not a rematbench results file")
    return results
