#!/usr/bin/env bash
# remat sweep over MPI stopped by SIGTERM, on rank 0 alone or on the worker
# ranks alone (a signal reaches every rank when it comes from mpirun or a
# batch system, one when it comes from `kill`): every rank stops within
# seconds, no task is handed out any more, the tasks in hand end as at a
# time limit and none of them is journaled, rank 0 prints one line and the
# job exits 143; the same command with --resume then runs the rest to the
# figures of an uninterrupted sweep. Before, a stopped rank 0 waited for a
# worker's task to end by itself (minutes, to its time limit), and stopped
# workers sent rank 0 the points of tasks the stop cut short, which it
# journaled and kept as a finished sweep's. Skipped (exit 77) as
# tests/sweep_mpi_test.sh is.
set -Eeuo pipefail
trap 'echo "sweep mpi stop: line $LINENO failed (status $?)" >&2; cat err.txt >&2 2>/dev/null || true' ERR
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
source "$source_dir/tests/mpi_sweep_support.sh"
require_mpi sweep_mpi_stop "$3"
enter_rank_death_folder
# Ten tasks: exact_search on the random graph at its lower bound runs for
# seconds, to its state limit (deterministic, so a resumed run has the
# uninterrupted run's figures); the nine others end at once. Rank 0 only
# dispatches, so that a worker holds the long task; the task handed to that
# worker after it waits behind it.
args=(--graphs "chain:n=8,random_layered:n=36,seed=1"
  --algorithms "noremat,revolve,exact_search:max_nodes=64,max_states=1500000"
  --budgets 2 --threads 1 --lead-threads 0 --timeout 600)
"$remat" sweep "${args[@]}" --out one.json >/dev/null 2>&1

# Stops the sweep writing OUT with SIGTERM to the ranks RANKS... once the
# eight quick tasks are journaled, then checks what it left.
stop_sweep() {
  local out=$1
  shift
  mpirun --allow-run-as-root --oversubscribe -n 3 "$remat" sweep "${args[@]}" \
    --out "$out" >/dev/null 2>err.txt &
  mpirun_pid=$!
  for _ in $(seq 600); do
    if [[ -e "$out.journal" ]] && (($(wc -l < "$out.journal") >= 1 + 8)); then
      break
    fi
    sleep 0.05
  done
  local victims=() rank
  for rank in "$@"; do victims+=("$(rank_pid "$rank")"); done
  local sent status=0
  sent=$(date +%s%N)
  kill -TERM "${victims[@]}"
  wait "$mpirun_pid" || status=$?
  mpirun_pid=
  # Within 3 s (the worker's task would run on for several).
  (((($(date +%s%N) - sent) / 1000000) < 3000))
  test "$status" -eq 143
  test "$(grep -c "^remat sweep: interrupted by SIGTERM; the tasks it finished are in $out.journal" err.txt)" -eq 1
  test ! -e "$out"
  "$REMAT_PYTHON" - "$out.journal" <<'PY'
import json, sys
tasks = [json.loads(t) for t in open(sys.argv[1]).read().splitlines()[1:]]
assert len(tasks) == 8, len(tasks)
assert all(p["status"] != "timeout" for t in tasks for p in t["points"]), \
    "a task the stop cut short was journaled"
PY
}

stop_sweep lead.json 0
stop_sweep workers.json 1 2

# Resumed over MPI, the sweep runs the two tasks left.
mpirun --allow-run-as-root --oversubscribe -n 3 "$remat" sweep "${args[@]}" \
  --out lead.json --resume >/dev/null 2>err.txt
"$REMAT_PYTHON" "$source_dir/scripts/same_figures.py" one.json lead.json \
  >/dev/null
"$REMAT_PYTHON" - lead.json <<'PY'
import json, sys
context = json.load(open(sys.argv[1]))["context"]
assert context["resumed_tasks"] == 8, context["resumed_tasks"]
PY
echo "sweep mpi stop: ok"
