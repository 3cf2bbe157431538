"""Build and test time of two commits, measured under the same load.

    .venv/bin/python bench/studies/build_time.py --old REV [--new REV] [--jobs N]
        [--out FILE]

On a shared machine a build's time says more about the other work than
about the code, and timing one commit after the other compares two
loads. So both commits are cloned and built once, then every translation
unit of both is compiled again one at a time, alternating old and new in
a shuffled order, and the compiler's CPU seconds summed per commit; then
the quick suites (ctest -LE slow) run test by test, alternating again.
With --jobs N, N rounds of compiles (one old unit, then one new) run side
by side, each unit's CPU seconds its own; the tests run one at a time.
The units are the entries of compile_commands.json, which CMake writes
for every compile of the build, a precompiled header's own build
included: a commit's total is that of its build from clean, the
precompiled headers counted once each (their count is reported too), and
a unit that uses one is compiled against it as in the build.
Tests of one name that pass in both are compared on their own, since a
suite that grew is slower for that reason alone. The results file has
the totals, the unit and test counts, the lines of C++ in each tree, the
costliest units of each, the tests that grew most, and the least and
greatest load average seen in each phase.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

from rematbench import script
from rematbench.files import run_context, write_json

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def prepare(work, name, rev, python):
    """A clone of this repository at `rev` in work/name, configured and
    built as scripts/build.sh builds (Release, tests on, no ccache)."""
    tree = os.path.join(work, name)
    if not os.path.isdir(tree):
        subprocess.run(["git", "clone", "-q", ROOT, tree], check=True)
    else:  # a clone of an earlier run: `rev` may be newer
        subprocess.run(["git", "-C", tree, "fetch", "-q", "origin"],
                       check=True)
    subprocess.run(["git", "-C", tree, "checkout", "-q", rev], check=True)
    build = os.path.join(tree, "build")
    subprocess.run(["cmake", "-S", tree, "-B", build, "-G", "Unix Makefiles",
                    "-DCMAKE_BUILD_TYPE=Release", "-DREMAT_BUILD_TESTS=ON",
                    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                    f"-DPython_EXECUTABLE={python}"],
                   check=True, stdout=subprocess.DEVNULL)
    log(f"{name} ({rev}): building")
    subprocess.run(["cmake", "--build", build, f"-j{os.cpu_count()}"],
                   check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, CCACHE_DISABLE="1"))
    return tree


def is_pch(command):
    """Whether a compile command builds a precompiled header (CMake's
    target_precompile_headers: a header compiled as such)."""
    return " -x c++-header " in command


def scratch_pch(command, scratch):
    """The command that builds a precompiled header, made to build it in
    the folder `scratch` from a copy of its header: the build's own stays
    whole for the units that read it (perhaps at the same time), and the
    header is parsed as in a build from clean, with no PCH of it beside."""
    os.makedirs(scratch, exist_ok=True)
    header = re.search(r" -include (\S+) ", command).group(1)
    copy = os.path.join(scratch, os.path.basename(header))
    shutil.copyfile(header, copy)
    command = command.replace(f" -include {header} ", f" -include {copy} ", 1)
    return re.sub(r" -o \S+ ", f" -o {copy}.pch ", command, count=1)


def cpu_seconds_of(command, cwd, env):
    """CPU seconds (user + sys) of a shell command and what it waits for,
    its own even while other commands run beside it (wait4)."""
    child = subprocess.Popen(command, shell=True, cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, command)
    return usage.ru_utime + usage.ru_stime


def alternate(queues, step, what, loads, jobs=1):
    """Runs step(name, item) for the items of both queues in rounds of one
    item of each, old then new; `jobs` rounds at a time side by side.
    Returns {name: {item: result}}. loads[what] gets the least and
    greatest 1-minute load average seen."""
    names = list(queues)
    rounds = list(itertools.zip_longest(*queues.values()))

    def run_round(items):
        return [(name, item, step(name, item))
                for name, item in zip(names, items) if item is not None]

    results = {name: {} for name in queues}
    total = sum(len(q) for q in queues.values())
    done = 0
    seen = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for finished in pool.map(run_round, rounds):
            for name, item, result in finished:
                results[name][item] = result
                done += 1
            seen.append(os.getloadavg()[0])
            log(f"{what}: {done}/{total}, load {seen[-1]:.2f}")
    if seen:
        loads[what] = [round(min(seen), 2), round(max(seen), 2)]
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the commit compared with")
    ap.add_argument("--new", default="HEAD")
    ap.add_argument("--work", default="/tmp/remat-build-time",
                    help="where the two clones and their builds go")
    ap.add_argument("--out", default=os.path.join(
        ROOT, "results", "build_time", "cpu.json"))
    ap.add_argument("--units", type=script.count, default=0,
                    help="compile only this many units of each (0: all; "
                         "fewer for a trial run)")
    ap.add_argument("--tests", type=script.count, default=None,
                    help="run only this many tests of each (default: all; "
                         "0: none)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="compile this many rounds (an old and a new unit, "
                         "in turn) side by side")
    ap.add_argument("--python", default=sys.executable,
                    help="the Python the trees' module is built for")
    args = ap.parse_args()
    revs = {"old": args.old, "new": args.new}
    revs = {name: subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                                  rev], check=True, capture_output=True,
                                 text=True).stdout.strip()
            for name, rev in revs.items()}
    os.makedirs(args.work, exist_ok=True)
    trees = {name: prepare(args.work, name, rev, args.python)
             for name, rev in revs.items()}

    commands = {}
    for name, tree in trees.items():
        with open(os.path.join(tree, "build", "compile_commands.json")) as f:
            entries = [(e["directory"], e["command"]) for e in json.load(f)]
        entries = [(d, scratch_pch(c, os.path.join(args.work, f"pch-{name}",
                                                   str(i)))
                    if is_pch(c) else c) for i, (d, c) in enumerate(entries)]
        random.Random(1).shuffle(entries)
        commands[name] = entries[:args.units or None]
    no_ccache = dict(os.environ, CCACHE_DISABLE="1")
    loads = {}
    compiled = alternate(
        {name: list(range(len(c))) for name, c in commands.items()},
        lambda name, i: cpu_seconds_of(commands[name][i][1],
                                       commands[name][i][0], no_ccache),
        "compile", loads, args.jobs)

    def names(tree):
        listing = subprocess.run(["ctest", "-N", "-LE", "slow"],
                                 cwd=os.path.join(tree, "build"),
                                 capture_output=True, text=True).stdout
        found = re.findall(r"Test\s+#\d+: (\S+)", listing)
        return found if args.tests is None else found[:args.tests]

    def run_test(name, test):
        t = time.perf_counter()
        r = subprocess.run(["ctest", "-R", "^" + re.escape(test) + "$"],
                           cwd=os.path.join(trees[name], "build"),
                           capture_output=True)
        return time.perf_counter() - t, r.returncode == 0

    tests = alternate({name: names(tree) for name, tree in trees.items()},
                      run_test, "tests", loads)
    common = [t for t in tests["old"] if t in tests["new"]
              and tests["old"][t][1] and tests["new"][t][1]]
    growth = sorted(common, key=lambda t: tests["old"][t][0] -
                    tests["new"][t][0])

    def cxx_lines(tree):
        files = subprocess.run(["git", "-C", tree, "ls-files", "*.cc", "*.h"],
                               check=True, capture_output=True,
                               text=True).stdout.split()
        return sum(sum(1 for _ in open(os.path.join(tree, f), "rb"))
                   for f in files)

    def heaviest(name, seconds):
        """The 8 costliest units: where the build's time goes."""
        top = sorted(seconds, key=seconds.get, reverse=True)[:8]
        return [{"unit": os.path.relpath(
                     commands[name][i][1].split()[-1], trees[name]),
                 "cpu_seconds": round(seconds[i], 1)} for i in top]

    doc = {
        "context": run_context(commits=revs),
        "cxx_lines": {name: cxx_lines(tree) for name, tree in trees.items()},
        "load_during": loads,
        "compile": {name: {"units": len(c),
                           "precompiled_headers": sum(
                               is_pch(commands[name][i][1]) for i in c),
                           "cpu_seconds": round(sum(c.values()), 1),
                           "heaviest": heaviest(name, c)}
                    for name, c in compiled.items()},
        "tests": {name: {"tests": len(r),
                         "passed": sum(ok for _, ok in r.values()),
                         "seconds": round(sum(s for s, _ in r.values()), 1),
                         "failed": [t for t, (_, ok) in r.items() if not ok]}
                  for name, r in tests.items()},
        "common_tests": {
            "tests": len(common),
            "seconds": {name: round(sum(tests[name][t][0] for t in common), 1)
                        for name in tests},
            "grew_most": [{"test": t, "old": round(tests["old"][t][0], 1),
                           "new": round(tests["new"][t][0], 1)}
                          for t in growth[:8]]},
    }
    write_json(args.out, doc, indent=1)
    log(json.dumps({k: doc[k] for k in ("compile", "common_tests")}))


if __name__ == "__main__":
    script.run(main)
