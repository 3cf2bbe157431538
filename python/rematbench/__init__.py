"""rematbench from Python: rematerialization (gradient checkpointing)
algorithms on training graphs, judged by the harness's one simulator.

    import rematbench as rb
    g = rb.load_graph("chain:n=16")          # a file or a generator spec
    g.noremat_peak_bytes, g.nodes[3].mem, g.content_hash
    [a.name for a in rb.algorithms()]        # the registry, with .params
    s = rb.solve(g, "revolve", budget=6, timeout=10)
    s.status, s.peak_bytes, s.overhead, s.json   # s.json: `remat solve --json`
    rb.simulate(g, s.schedule).peak_bytes
    rb.validate(g, s.schedule, budget=6)     # `remat validate --json`
    rb.validate(g, "s.txt", link="pcie3")    # and its --link, --compute-rate,
                                             # --host-budget (solve has them)
    doc = rb.sweep(["chain:n=64"], ["revolve", "twremat"], budgets=4)
                                             # the results document of `remat sweep`

Bad input raises rematbench.Error (a ValueError) with the CLI's one-line
message. The GIL is released while graphs load and while solves, simulations
and sweeps run. rematbench.torch plans and runs PyTorch training steps
under a memory budget.

The compiled core is rematbench._core (python/*.cc); `pip install .` builds
it with the package (scripts/install.sh for the project's environment).
Without it, the pure-Python modules (trace, executor) still work.
"""

try:
    from rematbench._core import (  # noqa: F401
        DEFAULT_CORPUS, AlgorithmInfo, Error, GeneratorInfo, Graph, Node,
        ParamSpec, Schedule, Simulation, Solution, algorithm, algorithms,
        budget_grid, format_bytes, generators, list_json, load_graph,
        parse_bytes, parse_graph_json, read_corpus, read_schedule, simulate,
        solve, sweep, validate)
    CORE_IMPORT_ERROR = None
except ModuleNotFoundError as e:  # not built: the pure-Python modules work
    if e.name != "rematbench._core":
        raise
    CORE_IMPORT_ERROR = e

    def __getattr__(name):
        raise ImportError(
            f"rematbench.{name} needs the compiled core rematbench._core, "
            f"which is not installed ({CORE_IMPORT_ERROR}): install the "
            "package with `pip install .` from the source tree")


def _isolate():
    """Isolated algorithms (the CBC-based Checkmate MILP) run in a child
    process, as in the CLI: this interpreter importing this package from
    its folder (python/bindings.cc). A stop kills them there."""
    import os
    import sys
    if CORE_IMPORT_ERROR is not None or not sys.executable:
        return
    from rematbench import _core
    _core._enable_isolation([
        sys.executable, "-c",
        "import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "from rematbench import _core; _core._isolated_child(sys.argv)",
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))])


_isolate()
