"""Ctrl-C during the core's long calls: the core looks for Python's
signals while it works, so a KeyboardInterrupt ends `solve`, `sweep` and
graph loads within about a second, also without a time limit; `timeout`
means what the CLI's --timeout means; and the core sweeps in a forked
child."""
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


@pytest.mark.parametrize("code", [SOLVE, SWEEP], ids=["solve", "sweep"])
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

