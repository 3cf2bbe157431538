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
import stat
import sys
import tempfile


class OutputError(OSError):
    """An output that cannot be written, in one line naming the path and
    the reason: an output that is one of the run's inputs, a full disk, a
    file size limit (EFBIG), a folder that cannot be made."""


# What this run read (results.load notes each file) and the script whose
# one-line errors end it with exit status 2 (results.load's `prog`).
_inputs = []
_prog = None


def note_input(path, prog=None):
    """Records `path` as one of this run's inputs: an output that is the
    same file is refused, not replaced. `prog` names the script: an
    OutputError then ends it with one line and exit status 2, as bad input
    does."""
    global _prog
    _inputs.append(os.path.abspath(path))
    if prog:
        _prog = prog


def _fail(message):
    if _prog:
        print(f"{_prog}: {message}", file=sys.stderr)
        sys.exit(2)
    raise OutputError(message)


def _reason(error):
    """strerror's reason, or the first line of the message."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return first_line(error)


def first_line(error):
    """An exception's message's first line (its type's name where the
    message is empty), for a one-line error built around it."""
    return (str(error).splitlines() or [type(error).__name__])[0]


def _target(path):
    """(in_place, file): where a write to `path` goes. What is not a
    regular file (a device, a FIFO, a socket) and anything reached through
    /proc or /dev/fd (/dev/stdout) is written in place: a rename would
    replace the device node or the link. A symbolic link to a regular file
    is followed: the link stays and the file it names is replaced."""
    p = path
    for _ in range(40):
        normal = os.path.normpath(os.path.abspath(p))
        if normal.startswith(("/proc/", "/dev/fd/")):
            return True, p
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return False, p
        except OSError:
            return True, p  # let open() say why
        if stat.S_ISDIR(st.st_mode):
            _fail(f"{path}: is a directory, not a file")
        if not stat.S_ISLNK(st.st_mode):
            return not stat.S_ISREG(st.st_mode), p
        p = os.path.join(os.path.dirname(p), os.readlink(p))
    _fail(f"{path}: cannot write (too many levels of symbolic links)")


def _refuse_inputs(path):
    for source in _inputs:
        try:
            same = os.path.samefile(path, source)
        except OSError:
            continue
        if same:
            _fail(f"{path}: is one of the inputs ({source}); it would be "
                  "replaced")


@contextlib.contextmanager
def replacing(path, binary=False):
    """A file opened for writing beside `path` (its folder is made if
    missing); when the block ends, the file is made readable by all
    (0644) and renamed over `path`. If the block raises, the file is
    removed and `path` is left as it was. What is not a regular file (a
    device, a FIFO, /dev/stdout) is written in place, never renamed over;
    an output that is one of the inputs noted by note_input is refused;
    a failed write (a full disk, a file size limit) raises OutputError,
    or ends a script with one line and exit status 2."""
    path = os.fspath(path)
    _refuse_inputs(path)
    in_place, target = _target(path)
    mode = "wb" if binary else "w"
    text = {} if binary else {"encoding": "utf-8"}
    if in_place:
        try:
            st = os.stat(target)
            if st.st_ino == os.fstat(1).st_ino and \
                    st.st_dev == os.fstat(1).st_dev:
                sys.stdout.flush()
                fd = os.dup(1)
            else:
                fd = os.open(target, os.O_WRONLY | os.O_CLOEXEC |
                             (os.O_TRUNC if stat.S_ISREG(st.st_mode) else 0))
        except OSError as e:
            _fail(f"{path}: cannot write ({_reason(e)})")
        try:
            with os.fdopen(fd, mode, **text) as f:
                yield f
        except OSError as e:
            _fail(f"{path}: write failed ({_reason(e)})")
        return
    folder = os.path.dirname(os.path.abspath(target))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp",
                                   prefix="." + os.path.basename(target) + ".")
    except OSError as e:
        _fail(f"{path}: cannot write ({_reason(e)})")
    try:
        with os.fdopen(fd, mode, **text) as f:
            yield f
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            _fail(f"{path}: write failed ({_reason(e)})")
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
