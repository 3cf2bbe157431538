#!/usr/bin/env bash
# remat sweep over MPI: `mpirun -n 3` on this host writes the figures of the
# single-process sweep, with every rank's tasks. Skipped (exit 77) where
# remat was built without MPI or mpirun is missing, except under CI=true
# (scripts/setup.sh installs Open MPI there), where that fails.
set -Eeuo pipefail
# Every command's output goes to files: say which one failed, and what the
# ranks said.
trap 'echo "sweep mpi: line $LINENO failed (status $?)" >&2; cat err.txt >&2 2>/dev/null || true' ERR
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
source "$source_dir/tests/mpi_sweep_support.sh"
require_mpi sweep_mpi "$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
args=(--graphs "chain:n=16,resnet:depth=18,batch=8,image=64,$source_dir/tests/fixtures/skip_connections.json"
  --algorithms noremat,revolve,twremat,checkpoint_last,exact_search,dp_approx
  --budgets 5 --timeout 600)
"$remat" sweep "${args[@]}" --threads 1 --out one.json >/dev/null 2>&1
# Under ASan (build-asan), Open MPI's own allocations, many in plugins it
# has unloaded by exit, are reported as leaks: not ours, and no
# suppression can name an unloaded module.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
mpirun --allow-run-as-root --oversubscribe -n 3 \
  "$remat" sweep "${args[@]}" --threads 1 --out three.json >/dev/null 2>err.txt
"$REMAT_PYTHON" "$source_dir/scripts/same_figures.py" one.json three.json \
  >/dev/null
"$REMAT_PYTHON" - three.json three.json.journal <<'PY'
import json, sys
context = json.load(open(sys.argv[1]))["context"]
assert context["ranks"] == 3, context["ranks"]
tasks = open(sys.argv[2]).read().splitlines()[1:]
keys = [json.dumps(json.loads(t)["key"], sort_keys=True) for t in tasks]
assert len(keys) == len(set(keys)), "a task journaled twice"
PY
# A worker rank killed mid-run (mpirun --enable-recovery keeps the others
# going): rank 0 takes it for dead once silent for REMAT_MPI_RANK_TIMEOUT
# seconds, hands its task out again, and writes every figure.
long=(--graphs "resnet:depth=18,batch=8,image=64,pspnet:backbone=resnet50,batch=2,image=64,chain:n=16"
  --algorithms noremat,revolve,twremat,dp_approx,rotor,exact_search
  --budgets 8 --threads 1 --timeout 600)
"$remat" sweep "${long[@]}" --out single.json >/dev/null 2>&1
start_recovering_sweep dead.json "${long[@]}"
kill_rank_once_journaled 2 dead.json
wait "$mpirun_pid"
grep -q "rank 2 silent for 3 s, taken for dead" err.txt
"$REMAT_PYTHON" "$source_dir/scripts/same_figures.py" single.json dead.json \
  >/dev/null

# Each rank loads the graphs itself: one missing on a rank is one line.
status=0
mpirun --allow-run-as-root --oversubscribe -n 3 \
  "$remat" sweep --graphs chain:n=8,no_such_graph.json --algorithms noremat \
  --out bad.json >/dev/null 2>err.txt || status=$?
test "$status" -ne 0
grep -q "no_such_graph.json" err.txt
test ! -e bad.json
# `remat` loads no Open MPI (its start-up); launched as ranks it becomes
# remat-mpi, built beside it (the sweeps above), and where that is missing
# it says so in one line.
if ldd "$remat" | grep libmpi >&2; then
  echo "sweep mpi: remat loads Open MPI" >&2
  exit 1
fi
mkdir alone
cp "$remat" alone/remat
status=0
OMPI_COMM_WORLD_SIZE=2 alone/remat sweep --graphs chain:n=4 \
  --algorithms noremat --out alone.json >/dev/null 2>err.txt || status=$?
test "$status" -eq 2
grep -q "alone/remat-mpi did not start" err.txt
test "$(wc -l <err.txt)" -eq 1
test ! -e alone.json
echo "sweep mpi: ok"
