# Sourced by the scripts: the project's Python environment, named once.
# REMAT_VENV (default: .venv in the source tree, made by scripts/setup.sh)
# holds torch, numpy, matplotlib, pytest and the build tools pinned in
# python/requirements.txt; REMAT_PYTHON is its interpreter, the Python of
# every script, test and benchmark and of the module's build (ctest sets it
# to the Python the build was configured with).
REMAT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REMAT_VENV=${REMAT_VENV:-$REMAT_ROOT/.venv}
REMAT_PYTHON=${REMAT_PYTHON:-$REMAT_VENV/bin/python}
export REMAT_VENV REMAT_PYTHON
