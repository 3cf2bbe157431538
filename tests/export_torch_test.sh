#!/usr/bin/env bash
# Smoke test of scripts/export_torch.py: a tiny ResNet and a tiny
# Transformer exported at both granularities must load in `remat graph
# info`, have forward, loss and backward nodes, and give a valid NoRemat
# schedule. Without torch: fails under CI=true (the CI must test the
# exporter), otherwise skipped with exit status 77 (ctest's
# SKIP_RETURN_CODE), never reported as passed.
# Usage: export_torch_test.sh REMAT_BINARY SOURCE_DIR
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
# shellcheck source=tests/require_torch.sh
source "$source_dir/tests/require_torch.sh"
require_torch export_torch torch torchvision
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export="$source_dir/scripts/export_torch.py"

count() {  # count FILE KIND: nodes of that kind per `remat graph info --json`
  "$remat" graph info --json "$1" | "$py" -c \
    "import json,sys; print(json.load(sys.stdin)['nodes_by_kind'].get('$2', 0))"
}

check() {
  local file=$1
  "$remat" graph info "$file" >/dev/null
  "$remat" solve -a noremat -g "$file" --json >"$work/solve.json"
  "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); \
assert r['status'] == 'feasible' and r['valid'], r" "$work/solve.json"
  local fwd bwd loss
  fwd=$(count "$file" forward)
  bwd=$(count "$file" backward)
  loss=$(count "$file" loss)
  echo "export_torch: $(basename "$file"): $fwd forward, $loss loss, $bwd backward"
  test "$fwd" -gt 0 && test "$bwd" -gt 0 && test "$loss" -eq 1
}

for g in aten module; do
  "$py" "$export" --model resnet18 --batch 2 --image 32 --classes 10 \
    --granularity "$g" -o "$work/resnet18_$g.json" 2>/dev/null
  check "$work/resnet18_$g.json"
  "$py" "$export" --model transformer --batch 2 --seq 4 --d-model 16 \
    --heads 2 --layers 1 --classes 10 --granularity "$g" \
    -o "$work/transformer_$g.json" 2>/dev/null
  check "$work/transformer_$g.json"
done

# The same command gives the same bytes (the committed graphs are
# regenerated bit for bit).
"$py" "$export" --model resnet18 --batch 2 --image 32 --classes 10 \
  --granularity aten -o "$work/again.json" 2>/dev/null
sed -i 's#"command": ".*"#"command": ""#' "$work/again.json"
sed 's#"command": ".*"#"command": ""#' "$work/resnet18_aten.json" >"$work/first.json"
cmp "$work/first.json" "$work/again.json"

# Measured costs are in nanoseconds.
"$py" "$export" --model resnet18 --batch 2 --image 32 --classes 10 \
  --cost measured --repeats 1 -o "$work/measured.json" 2>/dev/null
"$remat" graph info --json "$work/measured.json" | "$py" -c \
  "import json,sys; g=json.load(sys.stdin); assert g['units']['cost']=='ns' and g['base_cost'] > 0, g"

# Bad usage exits with status 2, and leaves no output file.
status=0
"$py" "$export" --model resnet18 --batch 1 -o "$work/x.json" 2>/dev/null || status=$?
test "$status" -eq 2
if ! "$py" -c "import torch, sys; sys.exit(torch.cuda.is_available())"; then
  status=0
  "$py" "$export" --model mlp --device cuda -o "$work/x.json" 2>/dev/null || status=$?
  test "$status" -eq 2
fi
test ! -e "$work/x.json"

# The models module rebuilds an export's step from its provenance alone.
"$py" "$export" --model mlp --width 4 --depth 1 -o "$work/mlp.json" 2>/dev/null
PYTHONPATH="$source_dir/scripts${PYTHONPATH:+:$PYTHONPATH}" "$py" -c "
import json, sys, rematbench.models as M
g = json.load(open(sys.argv[1]))
p = g['provenance']
a = M.model_args_from_provenance(p)
assert (a.model, a.width, a.depth, a.classes) == ('mlp', 4, 1, 3), a
assert p['seed'] == M.SEED and p['device'] == 'cpu', p
del p['model_args']  # older exports: the recorded command
assert M.model_args_from_provenance(p) == a
" "$work/mlp.json"
echo "export_torch: ok"
