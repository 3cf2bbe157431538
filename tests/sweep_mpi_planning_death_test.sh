#!/usr/bin/env bash
# remat sweep over MPI when rank 0 dies while the ranks still plan (load
# and summarize the graphs, before any task is handed out): under `mpirun
# --enable-recovery` the worker ranks end within seconds, each with one
# line, and the sweep then runs with --resume. Before the
# ranks kept their heartbeats while they planned, the workers waited in
# MPI's collectives forever; so did rank 0 when a worker died then.
# Skipped (exit 77) as tests/sweep_mpi_test.sh is.
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
source "$source_dir/tests/mpi_sweep_support.sh"
require_mpi sweep_mpi_planning_death "$3"
enter_rank_death_folder
# Planning these graphs takes each rank several seconds on one thread (the
# generated chains are summarized: peaks, lower bound, treewidth bound);
# solving them with noremat at one budget is quick.
graphs=chain:n=400000
for i in 1 2 3 4 5 6 7; do graphs+=",chain:n=40000$i"; done
args=(--graphs "$graphs" --algorithms noremat --budgets 1 --threads 1
  --timeout 60)
start_recovering_sweep dead.json "${args[@]}"
# Rank 0 is killed 1.5 s after it is seen: past MPI's start, well before
# the planning ends (which the missing journal then shows).
kill_rank_when_seen 0 1.5
if [[ -e dead.json.journal ]]; then
  echo "sweep_mpi_planning_death: rank 0 had planned before it was killed;" \
    "the test needs a longer planning" >&2
  exit 1
fi
# 3 s of silence, then the workers end: 30 s leaves room on a loaded host.
wait_for_sweep_end 30 sweep_mpi_planning_death "rank 0 died while planning"
for rank in 1 2; do
  test "$(grep -c "^remat: rank $rank: rank 0 silent for 3 s while planning, taken for dead" \
    err.txt)" -eq 1
done
test ! -e dead.json
# Rank 0 died before it wrote a journal: --resume starts from the beginning.
"$remat" sweep "${args[@]}" --out dead.json --resume >/dev/null 2>resume.txt
grep -q "no journal yet; starting from the beginning" resume.txt
"$REMAT_PYTHON" - dead.json <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
assert len(results["graphs"]) == 8, len(results["graphs"])
assert all(p["status"] == "feasible" for r in results["runs"]
           for p in r["points"]), results["runs"]
PY

# A worker that dies while the ranks plan: rank 0 cannot finish planning
# without it, so it ends with one line once the worker is silent for 3 s,
# and the other worker then ends as above.
start_recovering_sweep worker.json "${args[@]}"
kill_rank_when_seen 2 1.5
wait_for_sweep_end 30 sweep_mpi_planning_death "rank 2 died while planning"
test "$(grep -c "^remat: sweep: rank 2 silent for 3 s while the ranks planned, taken for dead" \
  err.txt)" -eq 1
test "$(grep -c "^remat: rank 1: rank 0 silent for 3 s while planning" \
  err.txt)" -eq 1
test ! -e worker.json
echo "sweep mpi planning death: ok"
