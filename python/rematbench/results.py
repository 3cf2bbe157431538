"""Reading a rematbench results file for the scripts that take one.

    from rematbench import results
    doc = results.load("my_script", path)   # or exit 2 with one line

Bad input is one line on stderr naming the script and the file, and exit 2:
never a traceback, never a hang on a FIFO, never exit 1 (which some scripts
keep for a real regression). Every results script reads through it.
"""
import json
import os
import re
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


_SPACE = re.compile(r"[ \t\n\r]*")
# What may go on a number: a piece that ends in it may end mid-number
# ("1e" of "1e-05"), where the decoder takes the "1" alone.
_NUMBER_TAIL = re.compile(r"[0-9eE.+-]*")
_PIECE = 1 << 20


class _Reader:
    """JSON text read a piece at a time, down to each point of each run,
    so that a script keeps only what it uses of each point and never holds
    the whole file (a 200 MB results file took 3.6 GB as one json.load)."""

    def __init__(self, f):
        self._f = f
        self._text = ""
        self._at = 0
        self._lines = 0  # newlines in the text already dropped
        self._dropped = 0  # characters dropped
        self._newline = -1  # where the last of them was
        self._eof = False
        self._decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)

    def _more(self):
        # At least as much again as is pending: a long element is read in
        # doubling pieces, not decoded again once per piece.
        piece = self._f.read(max(_PIECE, len(self._text) - self._at))
        self._lines += self._text.count("\n", 0, self._at)
        newline = self._text.rfind("\n", 0, self._at)
        if newline >= 0:
            self._newline = self._dropped + newline
        self._dropped += self._at
        self._text = self._text[self._at:] + piece
        self._at = 0
        self._eof = not piece

    def _fail(self, what, at):
        line = self._lines + self._text.count("\n", 0, at) + 1
        newline = self._text.rfind("\n", 0, at)
        newline = self._dropped + newline if newline >= 0 else self._newline
        column = self._dropped + at - newline
        raise ValueError(f"{what}: line {line} column {column} "
                         f"(char {self._dropped + at})")

    def peek(self):
        """The next character that is not white space ("" at the end)."""
        while True:
            self._at = _SPACE.match(self._text, self._at).end()
            if self._at < len(self._text) or self._eof:
                return self._text[self._at:self._at + 1]
            self._more()

    def take(self, char, what):
        if self.peek() != char:
            self._fail(f"Expecting {what}", self._at)
        self._at += 1

    def value(self):
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._text, self._at)
                # A number followed by nothing but what may go on a number
                # up to where the text read so far ends may go on in the
                # next piece.
                if self._eof or _NUMBER_TAIL.match(
                        self._text, end).end() < len(self._text):
                    self._at = end
                    return value
            except json.JSONDecodeError as e:
                if self._eof:
                    self._fail(e.msg, e.pos)
            self._more()

    def document(self, keep_point):
        """The whole document, each point of each run replaced by
        keep_point(point) as it is read."""
        def run():
            return self._object(lambda key: self._array(
                lambda: keep_point(self.value())) if key == "points"
                else self.value())
        doc = self._object(lambda key: self._array(run) if key == "runs"
                           else self.value())
        if self.peek():
            self._fail("Extra data", self._at)
        return doc

    def _object(self, member):
        """An object whose members are read by member(key); anything else
        as a whole."""
        if self.peek() != "{":
            return self.value()
        self._at += 1
        doc = {}
        while self.peek() != "}" or doc:
            if self.peek() != '"':
                self._fail("Expecting property name enclosed in double "
                           "quotes", self._at)
            key = self.value()
            self.take(":", "':' delimiter")
            if key in doc:
                raise ValueError(f"the key {key!r} twice in one object")
            doc[key] = member(key)
            if self.peek() == "}":
                break
            self.take(",", "',' delimiter")
        self.take("}", "'}'")
        return doc

    def _array(self, element):
        """An array whose elements are read by element(); anything else as
        a whole."""
        if self.peek() != "[":
            return self.value()
        self._at += 1
        items = []
        while self.peek() != "]" or items:
            items.append(element())
            if self.peek() == "]":
                break
            self.take(",", "',' delimiter")
        self.take("]", "']'")
        return items


def load(prog, path, keep_point=None):
    """The results document at `path`, or exit 2 with one line. The file
    is noted as an input (files.note_input): no output may replace it.
    `keep_point`, if given, is applied to each point of each run as it is
    read and its answer kept in the point's place (what a script uses of
    it)."""
    files.note_input(path, prog)
    if not os.path.isfile(path):  # a FIFO would block, a folder is no file
        bad_input(prog, f"{path}: " + ("not a regular file"
                                       if os.path.exists(path)
                                       else "no such file"))
    try:
        with open(path, encoding="utf-8") as f:
            results = _Reader(f).document(keep_point or (lambda p: p))
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
