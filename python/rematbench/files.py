"""Output files written whole or not at all, for the scripts and benches:
a killed run, a full disk or an exception leaves the old file (or none),
never half of a new one; and the context a report file records of the run
that wrote it.

    from rematbench import files
    files.write_json("results/x.json", doc, indent=1)
    with files.replacing("plot.png", binary=True) as f:
        fig.savefig(f, format="png")
    report = {"format": ..., "context": files.run_context(seed=seed)}
"""

import contextlib
import datetime
import json
import os
import socket
import sys
import tempfile


@contextlib.contextmanager
def replacing(path, binary=False):
    """A file opened for writing beside `path` (its folder is made if
    missing); when the block ends, the file is made readable by all
    (0644) and renamed over `path`. If the block raises, the file is
    removed and `path` is left as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp",
                               prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "wb" if binary else "w",
                       **({} if binary else {"encoding": "utf-8"})) as f:
            yield f
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_text(path, text):
    """`text` to `path`, whole or not at all."""
    with replacing(path) as f:
        f.write(text)


def write_json(path, doc, **dump_args):
    """`doc` as JSON (json.dump's `dump_args`) and a newline to `path`,
    whole or not at all."""
    with replacing(path) as f:
        json.dump(doc, f, **dump_args)
        f.write("\n")


def load_average():
    """The 1, 5 and 15 minute load averages, rounded to 0.01: what a
    report records beside a timing taken on a shared machine."""
    return [round(x, 2) for x in os.getloadavg()]


def run_context(**extra):
    """A report's "context": when (UTC, to the second), on which host
    with how many CPUs, the script's own `extra` keys, the load average
    and the command line, in that order."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        **extra,
        "load_average": load_average(),
        "command_line": " ".join(sys.argv),
    }
