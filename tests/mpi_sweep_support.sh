# Sourced by the MPI sweep tests (tests/sweep_mpi*_test.sh), which set
# `remat` (the binary) and wait for or clean up `mpirun_pid`.

# Exits 77 (skipped) where remat was built without MPI (WITH_MPI is not 1)
# or mpirun is missing, except under CI=true (scripts/setup.sh installs
# Open MPI there), where that fails. Then sets Open MPI up for this host:
# containers often forbid the cross-memory attach of its shared-memory
# transport; copying through the shared segment works everywhere. (Under
# ASan the tests also turn leak checks off before running mpirun: Open
# MPI's own allocations, many in plugins it has unloaded by exit, are
# reported as leaks, and no suppression can name an unloaded module.)
require_mpi() {
  local test=$1 with_mpi=$2
  if [[ "$with_mpi" != 1 ]] || ! command -v mpirun >/dev/null; then
    if [[ "${CI:-}" == "true" ]]; then
      echo "$test: Open MPI missing under CI (built with MPI: $with_mpi)" >&2
      exit 1
    fi
    echo "$test: skipped, no Open MPI" >&2
    exit 77
  fi
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
}

# Runs `remat sweep ARGS... --out OUT` on 3 ranks in the background under
# `mpirun --enable-recovery`, so that the other ranks go on when one is
# killed; a rank silent for 3 s is taken for dead. Sets mpirun_pid; the
# ranks' stderr goes to err.txt.
start_recovering_sweep() {
  local out=$1
  shift
  REMAT_MPI_RANK_TIMEOUT=3 mpirun --allow-run-as-root --oversubscribe \
    --enable-recovery -n 3 "$remat" sweep "$@" --out "$out" \
    >/dev/null 2>err.txt &
  mpirun_pid=$!
}

# The pid of MPI rank RANK of the sweep started above, or nothing yet.
rank_pid() {
  local rank=$1 p
  for p in $(pgrep -P "$mpirun_pid" || true); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null |
      grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then echo "$p"; fi
  done
}

# Kills (-9) MPI rank RANK of the sweep started above once OUT's journal
# holds a finished task (its header and a line), so that the kill falls
# mid-sweep. Fails if the rank's process was never seen.
kill_rank_once_journaled() {
  local rank=$1 out=$2 victim=
  for _ in $(seq 300); do
    victim=${victim:-$(rank_pid "$rank")}
    if [[ -n "$victim" && -e "$out.journal" ]] &&
      (($(wc -l < "$out.journal") >= 2)); then break; fi
    sleep 0.05
  done
  test -n "$victim"
  kill -9 "$victim"
}

# Kills (-9) MPI rank RANK of the sweep started above SECONDS after its
# process is first seen. Fails if it never is.
kill_rank_when_seen() {
  local rank=$1 seconds=$2 victim=
  for _ in $(seq 300); do
    victim=$(rank_pid "$rank")
    [[ -n "$victim" ]] && break
    sleep 0.05
  done
  test -n "$victim"
  sleep "$seconds"
  kill -9 "$victim"
}

# Waits up to SECONDS for the sweep started above to end (its ranks have
# exited), then reaps mpirun, whose own status says nothing (mpirun
# --enable-recovery ends 0 whatever its ranks' statuses). Fails with
# "NAME: ranks still running SECONDS s after WHAT" otherwise.
wait_for_sweep_end() {
  local seconds=$1 name=$2 what=$3
  for _ in $(seq $((seconds * 10))); do
    kill -0 "$mpirun_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$mpirun_pid" 2>/dev/null; then
    echo "$name: ranks still running $seconds s after $what" >&2
    exit 1
  fi
  wait "$mpirun_pid" || true
  mpirun_pid=
}

# Enters a temporary folder for a test that kills ranks; on exit the
# sweep's processes, if any are left, are killed and the folder removed.
# (Leak checks are off under ASan, as for require_mpi's runs.)
enter_rank_death_folder() {
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
  work=$(mktemp -d)
  mpirun_pid=
  trap end_rank_death_test EXIT
  cd "$work"
}
end_rank_death_test() {
  if [[ -n "$mpirun_pid" ]] && kill -0 "$mpirun_pid" 2>/dev/null; then
    pkill -9 -P "$mpirun_pid" || true
    kill -9 "$mpirun_pid" || true
  fi
  rm -rf "$work"
}
