"""Ctrl-C during the core's long calls: the core looks for Python's
signals while it works, so a KeyboardInterrupt ends `solve`, `sweep` and
graph loads within about a second, also without a time limit; `timeout`
means what the CLI's --timeout means; the core sweeps in a forked child;
and `remat` stops on SIGINT and SIGTERM with one line and 128 + the
signal, its sweep journaling only the tasks that finished and its
isolated solves leaving no process or temporary folder behind."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import rematbench as rb

# exact_search on this graph and budget runs to any time limit (minutes
# of A* states), checking its deadline as it goes.
GRAPH = "random_layered:n=36,seed=1"
SEARCH = {"max_nodes": 64, "max_states": 10**9}

SOLVE = f"""
import rematbench as rb
print("started", flush=True)
rb.solve({GRAPH!r}, "exact_search", budget=26000, params={SEARCH!r})
print("returned", flush=True)
"""

SWEEP = f"""
import rematbench as rb
print("started", flush=True)
rb.sweep(graphs=[{GRAPH!r}],
         algorithms=["exact_search:max_nodes=64,max_states=1000000000"],
         budgets=2, threads=1, timeout=600)
print("returned", flush=True)
"""


def interrupt(code, cwd):
    """Runs `code`, sends SIGINT a second into its long call; returns the
    seconds from the signal to the exit, and the exit's status, stdout
    and stderr."""
    child = subprocess.Popen([sys.executable, "-c", code], cwd=cwd,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "started"
        time.sleep(1.0)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        return time.monotonic() - sent, child.returncode, out, err
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# CBC looks at no stop: it runs in an isolated process, which the stop
# kills (in the Python process it ran to its time limit, here none).
CBC = """
import rematbench as rb
print("started", flush=True)
rb.solve("resnet:depth=18,batch=8,image=64", "checkmate_milp", budget=8000000,
         params={"solver": "cbc", "warm_start": "chen_sqrtn",
                 "settle_nonzeros_per_second": 0})
print("returned", flush=True)
"""


@pytest.mark.parametrize("code", [SOLVE, SWEEP, CBC],
                         ids=["solve", "sweep", "cbc"])
def test_ctrl_c_ends_a_long_call_within_seconds(code, tmp_path):
    seconds, status, out, err = interrupt(code, tmp_path)
    assert "KeyboardInterrupt" in err, err
    assert "returned" not in out
    assert status != 0
    assert seconds < 5, seconds


def test_a_call_after_an_interrupted_one_runs_to_its_answer(tmp_path):
    code = f"""
import rematbench as rb
print("started", flush=True)
try:
    rb.solve({GRAPH!r}, "exact_search", budget=26000, params={SEARCH!r})
except KeyboardInterrupt:
    s = rb.solve("chain:n=8", "revolve", budget=6, timeout=10)
    print("after", s.status, flush=True)
"""
    seconds, status, out, err = interrupt(code, tmp_path)
    assert "after feasible" in out, err
    assert status == 0, err


def test_timeout_is_the_clis():
    with pytest.raises(rb.Error) as refused:
        rb.solve("chain:n=8", "revolve", budget=6, timeout=0)
    assert str(refused.value) == (
        "solve: timeout: must be a number of seconds > 0 (got 0)")
    assert rb.solve("chain:n=8", "revolve", budget=6).status == "feasible"


FORK = """
import json
import os
import rematbench as rb
sweep = dict(graphs=["chain:n=8"], algorithms=["noremat", "revolve"],
             budgets=2, threads=2, timeout=5)
rb.sweep(**sweep)
pid = os.fork()
if pid == 0:
    rb.sweep(**sweep)
    os._exit(0)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def test_a_forked_child_sweeps_after_its_parent_did(tmp_path):
    # The work runs on a thread of each call's own, whose OpenMP threads end
    # with it: a child forked after a threaded sweep inherits no team of
    # threads that no longer exist there (it hung for ever).
    done = subprocess.run([sys.executable, "-c", FORK], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "child 0", done.stderr


LOAD = """
import os, signal, sys, threading, time
import rematbench as rb
path = sys.argv[1]
start = time.monotonic()
rb.load_graph(path)
whole = time.monotonic() - start
sent = []
def interrupt():
    time.sleep(whole / 4)
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt).start()
try:
    rb.load_graph(path)
    print("returned", flush=True)
except KeyboardInterrupt:
    print(whole, time.monotonic() - sent[0], flush=True)
"""


@pytest.mark.parametrize("fmt,n", [("json", 80000), ("remat2", 150000)])
def test_ctrl_c_ends_a_graph_load(tmp_path, fmt, n):
    # The child times a whole load of the file, then interrupts a second
    # load a quarter of the way in: the readers look for the stop as they
    # go, so the load ends long before its end (it ran to the end, and the
    # interrupt was raised only then, 3/4 of a load later).
    path = tmp_path / f"g.{fmt}"
    path.write_text(rb.load_graph(f"chain:n={n}").write(fmt))
    done = subprocess.run([sys.executable, "-c", LOAD, str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    whole, after = map(float, done.stdout.split())
    assert after < whole / 2, (whole, after)


SOURCE = os.environ.get("REMAT_SOURCE_DIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REMAT = os.environ.get("REMAT_BINARY", os.path.join(SOURCE, "build", "remat"))
EXACT = ["-g", GRAPH, "-a", "exact_search", "-b", "26000",
         "-p", "max_nodes=64", "-p", "max_states=1000000000"]


def isolated_children(parent):
    """Pids of the isolated solves `parent` started that still run (their
    command lines end with the isolation flag and the parent's pid)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")[:-1]
        except OSError:
            continue
        if args[-2:] == [b"--remat-isolated-solve", str(parent).encode()]:
            found.append(int(pid))
    return found


def stop_remat(args, cwd, signum=signal.SIGINT, ready=None, env=None):
    """Runs `remat args`, sends `signum` once `ready(pid)` holds (looked at
    every 50 ms for up to 30 s) and at least a second has passed; returns
    the seconds from the signal to the exit, the status, stdout, stderr and
    the isolated solves left running."""
    child = subprocess.Popen([REMAT, *args], cwd=cwd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        started = time.monotonic()
        while time.monotonic() - started < 30:
            if (time.monotonic() - started >= 1 and
                    (ready is None or ready(child.pid))):
                break
            time.sleep(0.05)
        assert child.poll() is None, child.communicate()
        sent = time.monotonic()
        child.send_signal(signum)
        out, err = child.communicate(timeout=60)
        return (time.monotonic() - sent, child.returncode, out, err,
                isolated_children(child.pid))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_cli_solve_stops_on_a_signal(tmp_path, signum):
    # The solve would run for minutes; it ends as at a time limit, and the
    # command prints one line and exits with 128 + the signal (it died of
    # the signal, silently).
    seconds, status, out, err, _ = stop_remat(["solve", *EXACT], tmp_path,
                                              signum)
    name = signal.Signals(signum).name
    assert (status, out, err) == (
        128 + signum, "", f"remat solve: interrupted by {name}\n")
    assert seconds < 5, seconds


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_cli_validate_stops_on_a_signal(tmp_path, signum):
    # 16 million events before the chain's own schedule: validate reads
    # and simulates them for about a second or more. Timed whole first,
    # then signalled a quarter of the way in, while it reads the schedule:
    # it ends within a second and long before the rest of its run (it read
    # the whole schedule before it looked for the stop), prints one line
    # and nothing on stdout.
    chain = tmp_path / "chain.txt"
    subprocess.run([REMAT, "solve", "-g", "chain:n=8", "-a", "noremat",
                    "--schedule-out", str(chain)], check=True,
                   capture_output=True)
    schedule = tmp_path / "s.txt"
    schedule.write_text("c 0\nf 0\n" * 8_000_000 + chain.read_text())
    args = [REMAT, "validate", "-g", "chain:n=8", "-s", str(schedule)]
    started = time.monotonic()
    whole = subprocess.run(args, capture_output=True, text=True)
    whole_seconds = time.monotonic() - started
    assert whole.returncode == 0, whole.stderr

    child = subprocess.Popen(args, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(whole_seconds / 4)
        assert child.poll() is None, child.communicate()
        sent = time.monotonic()
        child.send_signal(signum)
        out, err = child.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    name = signal.Signals(signum).name
    assert (child.returncode, out, err) == (
        128 + signum, "", f"remat validate: interrupted by {name}\n")
    assert seconds < min(1, whole_seconds / 4), (seconds, whole_seconds)


def test_cli_sweep_journals_only_the_tasks_that_finished(tmp_path):
    # Nine tasks end at once; the exact search at the random graph's lower
    # bound runs for minutes until the stop cuts it short. The journal
    # keeps the nine, not the cut one (whose points would be a time
    # limit's), and a resumed sweep takes the nine from it.
    out = tmp_path / "r.json"
    journal = tmp_path / "r.json.journal"
    args = ["sweep", "--graphs", f"chain:n=8,{GRAPH}", "--algorithms",
            "noremat,revolve,exact_search:max_nodes=64,max_states=1000000000",
            "--budgets", "2", "--threads", "2", "--timeout", "600",
            "--out", str(out)]

    def nine_journaled(pid):
        return (journal.exists() and
                len(journal.read_text().splitlines()) == 1 + 9)

    seconds, status, _, err, _ = stop_remat(args, tmp_path,
                                            ready=nine_journaled)
    assert status == 130, err
    assert err.splitlines()[-1] == (
        f"remat sweep: interrupted by SIGINT; the tasks it finished are in "
        f"{journal}; the same command with --resume goes on from there")
    assert seconds < 5, seconds
    assert not out.exists()
    entries = [json.loads(line)
               for line in journal.read_text().splitlines()[1:]]
    assert len(entries) == 9
    assert all(point["status"] != "timeout"
               for entry in entries for point in entry["points"])

    _, status, _, err, _ = stop_remat([*args, "--resume"], tmp_path)
    assert status == 130, err
    assert "9/10 tasks (9 resumed)" in err, err
    assert len(journal.read_text().splitlines()) == 1 + 9


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_cli_isolated_solve_stops_and_cleans_up(tmp_path, solver):
    # checkmate_milp runs in an isolated process; HiGHS runs as a program
    # of its own in a temporary folder, CBC in that process, and each
    # would run for minutes on this model. The stop reaches the isolated
    # process, which kills HiGHS and removes its folder (the parent's death
    # would leave the folder); CBC, which looks at no stop, is killed.
    temp = tmp_path / "tmp"
    temp.mkdir()
    args = ["solve", "-g", "resnet:depth=18,batch=8,image=64",
            "-a", "checkmate_milp", "-b", "8000000", "-p", f"solver={solver}",
            "-p", "warm_start=chen_sqrtn", "-p", "settle_nonzeros_per_second=0"]

    def solving(pid):
        if solver == "highs":
            return any(p.name.startswith("remat-highs-")
                       for p in temp.iterdir())
        return bool(isolated_children(pid))

    seconds, status, out, err, left = stop_remat(
        args, tmp_path, ready=solving, env=dict(os.environ, TMPDIR=str(temp)))
    assert (status, out, err) == (
        130, "", "remat solve: interrupted by SIGINT\n")
    assert seconds < 5, seconds
    assert left == []
    assert list(temp.iterdir()) == []
