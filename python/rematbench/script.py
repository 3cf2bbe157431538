"""What every script under scripts/ and bench/studies/ shares with the
remat CLI: numeric options validated as the CLI's are (argparse types: a
bad value is argparse's one line and exit 2), standard output whose every
write and close is checked, and names read from files escaped before they
reach a terminal.

    from rematbench import script
    ap.add_argument("--timeout", type=script.positive, default=60)
    print(f"{script.shown(graph_name)}: ...")
    if __name__ == "__main__":
        script.run(main, sys.argv[1:])
"""
import argparse
import math
import os
import re
import sys


def _number(text, what, ok, parse=float):
    try:
        value = parse(text)
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


def count(text):
    """An option's whole number >= 0 (argparse's `type`), such as repeats
    where 0 means none."""
    return _number(text, "an integer >= 0", lambda v: v >= 0, int)


def positive_count(text):
    """An option's whole number >= 1 (argparse's `type`), such as budgets
    per graph or worker threads."""
    return _number(text, "an integer >= 1", lambda v: v >= 1, int)


def positives(text):
    """An option's comma-separated numbers, each > 0 (argparse's
    `type`), such as fractions of a peak."""
    try:
        return [positive(part) for part in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of finite numbers > 0"
        ) from None


# C0 and C1 controls and DEL (an escape sequence, a newline, CSI), and the
# lone surrogates that stand for undecodable bytes of a file name.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(match):
    c = match.group()
    if "\udc80" <= c <= "\udcff":
        return f"\\x{ord(c) - 0xdc00:02x}"
    if c >= "\ud800":
        return f"\\u{ord(c):04x}"
    return "".join(f"\\x{b:02x}" for b in c.encode())


def shown(name):
    """`name` (read from a file) as it may go to a terminal: control
    characters as \\xNN of their UTF-8 bytes, as the CLI's tables show
    them; other text kept as it is."""
    return _CONTROL.sub(_escape, str(name))


class _CheckedStdout:
    """sys.stdout whose failed writes and flushes (a full disk, a closed
    pipe, no stdout at all) end the script with one line and exit status
    2 rather than a traceback, or exit 0 with the output lost."""

    def __init__(self, stream, prog):
        self._stream = stream
        self._prog = prog

    def _failed(self, error):
        reason = error.strerror or str(error)
        print(f"{self._prog}: stdout: write failed ({reason})",
              file=sys.stderr)
        # What stays buffered would fail again when Python exits (and turn
        # the status into 120): it goes nowhere instead.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        raise SystemExit(2)

    def write(self, text):
        if self._stream is None:
            self._failed(OSError(9, os.strerror(9)))
        try:
            return self._stream.write(text)
        except OSError as e:
            self._failed(e)

    def flush(self):
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as e:
            self._failed(e)

    def close(self):
        self.flush()
        if self._stream is not None:
            try:
                self._stream.close()
            except OSError as e:
                self._failed(e)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def run(main, *args):
    """Runs `main(*args)` and exits with its status (None: 0) once
    standard output is flushed and closed; a write to it that fails (as
    under `> /dev/full`), then or before, ends the run with one line naming
    the reason and exit status 2."""
    prog = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    sys.stdout = _CheckedStdout(sys.stdout, prog)
    try:
        status = main(*args)
    finally:
        sys.stdout.close()
    sys.exit(status)
