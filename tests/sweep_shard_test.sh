#!/usr/bin/env bash
# remat sweep --shard and remat merge: shards 0/3, 1/3 and 2/3 merged (from
# results files or journals) have the figures of the unsharded sweep, gaps
# included; a missing shard is noted; files of another configuration are
# refused with one line and exit 2.
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
same=("$REMAT_PYTHON" "$source_dir/scripts/same_figures.py")
args=(--graphs "chain:n=16,resnet:depth=18,batch=8,image=64,$source_dir/tests/fixtures/skip_connections.json"
  --algorithms noremat,revolve,twremat,checkpoint_last,exact_search
  --threads 1 --timeout 600)

"$remat" sweep "${args[@]}" --budgets 5 --out all.json >/dev/null 2>&1
for i in 0 1 2; do
  "$remat" sweep "${args[@]}" --budgets 5 --shard "$i/3" --out "s$i.json" >/dev/null 2>&1
done
"$REMAT_PYTHON" - all.json s0.json s1.json s2.json <<'PY'
import json, sys
def count(path):
    return sum(len(r["points"]) for r in json.load(open(path))["runs"])
total, shards = count(sys.argv[1]), [count(p) for p in sys.argv[2:]]
assert all(0 < n < total for n in shards) and sum(shards) == total, (total, shards)
# exact_search proves optima: the unsharded file has gaps to reproduce.
assert any("gap" in p for r in json.load(open(sys.argv[1]))["runs"]
           for p in r["points"])
PY
"$remat" merge s0.json s1.json s2.json -o merged.json >/dev/null
"${same[@]}" all.json merged.json >/dev/null
"$remat" merge s0.json.journal s1.json s2.json.journal -o merged2.json >/dev/null
"${same[@]}" all.json merged2.json >/dev/null

# A missing shard: merged with a note, and the figures differ.
"$remat" merge s0.json s2.json -o part.json >/dev/null 2>err.txt
grep -q "points are in none of the files" err.txt
status=0
"${same[@]}" all.json part.json >/dev/null || status=$?
test "$status" -eq 1

# Another configuration (time limit): refused, nothing written.
"$remat" sweep "${args[@]/600/300}" --budgets 5 --shard 1/3 --out other.json \
  >/dev/null 2>&1
status=0
"$remat" merge s0.json other.json s2.json -o bad.json >/dev/null 2>err.txt \
  || status=$?
test "$status" -eq 2
test "$(wc -l < err.txt)" -eq 1
grep -q "other.json: from another configuration (timeout_seconds differs" err.txt
test ! -e bad.json

# A bad shard is bad usage.
status=0
"$remat" sweep "${args[@]}" --budgets 5 --shard 3/3 --out x.json >/dev/null 2>err.txt \
  || status=$?
test "$status" -eq 2
test "$(wc -l < err.txt)" -eq 1
echo "sweep shards: ok"
