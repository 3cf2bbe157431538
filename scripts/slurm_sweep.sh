#!/usr/bin/env bash
# A sweep as a Slurm job array: every array task runs one shard of the same
# sweep, with its own journal, and a last job merges the shards' files.
#
#   sbatch --array=0-15 scripts/slurm_sweep.sh      # 16 shards
#   # when all have ended (or: sbatch --dependency=afterany:<jobid> ...):
#   REMAT_MERGE=1 scripts/slurm_sweep.sh            # results/cluster/sweep.json
#
# A shard that was killed (time limit, preemption, lost node) is rerun with
# the same array index: --resume skips what its journal already has. The
# merge refuses shards of another configuration or code version (exit 2),
# and notes points that no shard has. Run from the repository (built with
# scripts/build.sh) on a file system every node sees. REMAT_SWEEP_ARGS
# overrides the sweep (every shard must get the same arguments).
#SBATCH --job-name=remat-sweep
#SBATCH --cpus-per-task=8
#SBATCH --time=24:00:00
#SBATCH --output=results/cluster/slurm-%A_%a.out
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$(dirname "$0")/..}"
out=results/cluster
mkdir -p "$out"
read -r -a sweep_args <<< "${REMAT_SWEEP_ARGS:---corpus graphs/corpus/full.json --algorithms all --budgets 16 --timeout 600}"

if [[ "${REMAT_MERGE:-0}" == 1 ]]; then
  # The journals hold every finished point, also of shards that did not end.
  exec build/remat merge "$out"/shard-*.json.journal -o "$out/sweep.json"
fi

shards=${SLURM_ARRAY_TASK_COUNT:?run with sbatch --array=0-(N-1)}
index=${SLURM_ARRAY_TASK_ID:?run with sbatch --array=0-(N-1)}
exec build/remat sweep "${sweep_args[@]}" \
  --threads "${SLURM_CPUS_PER_TASK:-0}" --shard "$index/$shards" \
  --out "$out/shard-$index.json" --resume
