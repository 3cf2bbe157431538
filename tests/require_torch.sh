# Sourced by the PyTorch script tests (after scripts/env.sh):
# `require_torch NAME MODULES...` returns when the project's Python imports
# MODULES; otherwise the test fails under CI=true (CI must run it) and is
# skipped elsewhere with exit status 77 (ctest's SKIP_RETURN_CODE), never
# reported as passed.
py=$REMAT_PYTHON

require_torch() {
  local name=$1
  shift
  local modules
  modules=$(IFS=,; echo "$*")
  "$py" -c "import $modules" 2>/dev/null && return 0
  local hint='scripts/setup.sh makes the environment'
  if [[ "${CI:-}" == "true" ]]; then
    echo "$name: FAILED: CI=true and $py cannot import $modules ($hint)"
    exit 1
  fi
  echo "$name: SKIPPED: $py cannot import $modules ($hint)"
  exit 77
}
