#!/usr/bin/env bash
# Tests of scripts/replay_torch.py and scripts/replay_sweep.py
# (tests/replay_torch_test.py): tiny models exported, replayed under
# every registered algorithm, checked against the simulator and eager
# gradients; bad input refused with exit status 2.
# Without torch: fails under CI=true (the CI must test the replayer),
# otherwise skipped with exit status 77 (ctest's SKIP_RETURN_CODE).
# Usage: replay_torch_test.sh REMAT_BINARY SOURCE_DIR
set -euo pipefail
remat=$1
source_dir=$2
py=/usr/bin/python3
if ! "$py" -c "import torch, torchvision, matplotlib" 2>/dev/null; then
  hint='REMAT_EXTRA_PACKAGES="python3-torch python3-torchvision" scripts/setup.sh'
  if [[ "${CI:-}" == "true" ]]; then
    echo "replay_torch: FAILED: CI=true and $py cannot import torch/torchvision/matplotlib ($hint)"
    exit 1
  fi
  echo "replay_torch: SKIPPED: $py cannot import torch/torchvision/matplotlib ($hint)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
TMPDIR="$work" REMAT="$remat" PYTHONPATH="$source_dir/scripts" \
  "$py" "$source_dir/tests/replay_torch_test.py"
echo "replay_torch: ok"
