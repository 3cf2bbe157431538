#!/usr/bin/env bash
# An isolated solve dies with the `remat` that started it:
# SIGKILL or SIGTERM of the parent leaves no solver running.
# Usage: isolation_parent_death_test.sh path/to/remat
set -uo pipefail
remat=$1
for signal in KILL TERM; do
  # checkmate_milp runs isolated; 120 s keeps the child busy long enough.
  "$remat" solve -g resnet:depth=18,batch=8,image=64 -a checkmate_milp \
    -b 8000000 --timeout 120 >/dev/null 2>&1 &
  parent=$!
  child=""
  for _ in $(seq 150); do
    child=$(pgrep -f -- "--remat-isolated-solve $parent\$" || true)
    [ -n "$child" ] && break
    sleep 0.2
  done
  if [ -z "$child" ]; then
    echo "FAIL: no isolated child of $parent appeared"
    kill -9 "$parent" 2>/dev/null
    exit 1
  fi
  kill -"$signal" "$parent"
  wait "$parent" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$child" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$child" 2>/dev/null; then
    echo "FAIL: child $child outlived its parent killed with SIG$signal"
    kill -9 "$child"
    exit 1
  fi
  echo "ok: child $child died with its parent (SIG$signal)"
done
