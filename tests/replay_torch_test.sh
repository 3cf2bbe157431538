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
# shellcheck source=tests/require_torch.sh
source "$source_dir/tests/require_torch.sh"
require_torch replay_torch torch torchvision matplotlib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
TMPDIR="$work" REMAT="$remat" PYTHONPATH="$source_dir/scripts" \
  "$py" "$source_dir/tests/replay_torch_test.py"
echo "replay_torch: ok"
