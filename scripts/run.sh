#!/usr/bin/env bash
# The main job: set-up, Release build, the default sweep (every registered
# algorithm on the default corpus), a results file, plots and the report:
#   results/default/sweep.json, results/default/plots/*.png|pdf,
#   results/default/report.html (interactive, self-contained: scripts/report.py)
# REMAT_BUDGETS (default 8) and REMAT_TIMEOUT (seconds per task, default
# 10) tune the sweep; extra arguments go to `remat sweep` (e.g. --threads 1).
# The exact methods (moccasin, checkmate_milp, checkmate_lp) take most of
# the running time, about 4 minutes on two cores:
# bench/studies/main_job.py times these steps (results/main_job/cpu.json).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
scripts/build.sh
scripts/install.sh
mkdir -p results/default
build/remat sweep --corpus graphs/corpus/default.json --algorithms all \
  --budgets "${REMAT_BUDGETS:-8}" --timeout "${REMAT_TIMEOUT:-10}" \
  --out results/default/sweep.json "$@"
"$REMAT_PYTHON" scripts/plot_tradeoff.py results/default/sweep.json \
  --out results/default/plots
"$REMAT_PYTHON" scripts/report.py results/default/sweep.json \
  -o results/default/report.html >/dev/null
echo "results: results/default/sweep.json, plots: results/default/plots/"
echo "report: $PWD/results/default/report.html"
