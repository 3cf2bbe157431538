"""Reading a rematbench results file for the scripts that take one.

    from rematbench import results
    doc = results.load("my_script", path)   # or exit 2 with one line

Bad input is one line on stderr naming the script and the file, and exit 2:
never a traceback, never a hang on a FIFO, never exit 1 (which some scripts
keep for a real regression). Every results script reads through it.
"""
import json
import os
import sys

from rematbench import files


def bad_input(prog, message):
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(2)


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
            results = json.load(f)
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
