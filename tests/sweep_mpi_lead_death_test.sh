#!/usr/bin/env bash
# remat sweep over MPI when rank 0 dies: under `mpirun --enable-recovery`
# the worker ranks end within seconds, each with one line, and the journal
# rank 0 left resumes to the single-process sweep's figures. Before the
# workers listened for rank 0's heartbeat, they polled forever. Skipped
# (exit 77) as tests/sweep_mpi_test.sh is.
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
source "$source_dir/tests/mpi_sweep_support.sh"
require_mpi sweep_mpi_lead_death "$3"
enter_rank_death_folder
# exact_search on chain:n=18 (about 0.5 s a task) keeps the sweep running
# well past its first journal line, when rank 0 is killed.
args=(--graphs "resnet:depth=18,batch=8,image=64,pspnet:backbone=resnet50,batch=2,image=64,chain:n=18"
  --algorithms noremat,revolve,twremat,dp_approx,rotor,exact_search
  --budgets 8 --threads 1 --timeout 600)
"$remat" sweep "${args[@]}" --out single.json >/dev/null 2>&1
start_recovering_sweep dead.json "${args[@]}"
kill_rank_once_journaled 0 dead.json
# 3 s of silence, then the workers end: 20 s leaves room on a loaded host.
wait_for_sweep_end 20 sweep_mpi_lead_death "rank 0 died"
for rank in 1 2; do
  test "$(grep -c "^remat: rank $rank: rank 0 silent for 3 s, taken for dead" \
    err.txt)" -eq 1
done
# Rank 0 died before the end: no results, only its journal.
test ! -e dead.json
"$remat" sweep "${args[@]}" --out dead.json --resume >/dev/null 2>&1
"$REMAT_PYTHON" "$source_dir/scripts/same_figures.py" single.json dead.json \
  >/dev/null
"$REMAT_PYTHON" - dead.json <<'PY'
import json, sys
context = json.load(open(sys.argv[1]))["context"]
assert context["resumed_tasks"] >= 1, context["resumed_tasks"]
PY
echo "sweep mpi lead death: ok"
