#!/usr/bin/env python3
"""Fuzzes rematbench.results' piecewise reader against json.loads (with
the reader's own rule that a key appears once in an object): a sweep
document written by the remat CLI, mutated at random (bytes replaced,
inserted, deleted; spans repeated or cut), read in random piece sizes.
Both must refuse the same texts and read the same documents from the
rest. Prints the cases tried and each outcome's count; a disagreement
is written to OUT_DIR/disagreement-N.json and makes the exit status 1.

    $REMAT_PYTHON scripts/fuzz_results_reader.py --seconds 600
"""

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from rematbench import results, script

# What a mutation may put in: JSON's own punctuation and literals, and
# bytes a file should not hold (NUL, controls, a lone surrogate's escape).
ALPHABET = list('{}[],:"\\ 0123456789.eE+-tfnul') + \
    ["\0", "\x1f", "\x7f", "\\ud800", "NaN", "Infinity", "1e400", "\n"]


def mutated(text, rng):
    out = text
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(out) + 1)
        kind = rng.randrange(5)
        if kind == 0 and i < len(out):
            out = out[:i] + rng.choice(ALPHABET) + out[i + 1:]
        elif kind == 1:
            out = out[:i] + rng.choice(ALPHABET) + out[i:]
        elif kind == 2:
            out = out[:i] + out[i + rng.randint(1, 8):]
        elif kind == 3:
            j = min(len(out), i + rng.randint(1, 64))
            out = out[:j] + out[i:j] + out[j:]
        else:
            out = out[:i]
    return out


def outcome(read, text):
    try:
        return "read", read(text)
    except (ValueError, RecursionError) as e:
        return "refused", type(e).__name__


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=script.positive, default=60)
    ap.add_argument("--seed", type=script.count, default=0)
    ap.add_argument("--remat", default=os.environ.get("REMAT_BINARY",
                                                      "build/remat"))
    ap.add_argument("--out-dir", default=tempfile.gettempdir())
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        subprocess.run([args.remat, "sweep", "--graphs",
                        "chain:n=6,unet:levels=2", "--algorithms",
                        "noremat,revolve,dtr", "--budgets", "3",
                        "--threads", "1", "-o", path],
                       check=True, capture_output=True)
        with open(path) as f:
            text = f.read()
    rng = random.Random(args.seed)
    counts, bad = {"read": 0, "refused": 0}, 0
    end = time.monotonic() + args.seconds
    piece = results._PIECE
    try:
        while time.monotonic() < end:
            case = mutated(text, rng)
            results._PIECE = rng.choice((1, 2, 3, 7, 64, 4096, 1 << 20))
            expected = outcome(lambda t: json.loads(
                t, object_pairs_hook=results._unique_keys), case)
            got = outcome(lambda t: results._Reader(io.StringIO(t))
                          .document(lambda r: r), case)
            # Compared as JSON text: NaN, which both read, is not equal to
            # itself.
            if expected[0] != got[0] or (got[0] == "read" and json.dumps(
                    expected[1]) != json.dumps(got[1])):
                bad += 1
                out = os.path.join(args.out_dir, f"disagreement-{bad}.json")
                with open(out, "w") as f:
                    f.write(case)
                print(f"disagreement: json.loads {expected[0]}, reader "
                      f"{got[0]} (piece {results._PIECE}): {out}")
            counts[got[0]] += 1
    finally:
        results._PIECE = piece
    print(f"{sum(counts.values())} cases in {args.seconds:g} s: "
          f"{counts['read']} read, {counts['refused']} refused, "
          f"{bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
