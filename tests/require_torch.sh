# Sourced by the PyTorch script tests: `require_torch NAME MODULES...`
# returns when Debian's Python imports MODULES; otherwise the test fails
# under CI=true (CI must run it) and is skipped elsewhere with exit status
# 77 (ctest's SKIP_RETURN_CODE), never reported as passed.
py=/usr/bin/python3

require_torch() {
  local name=$1
  shift
  local modules
  modules=$(IFS=,; echo "$*")
  "$py" -c "import $modules" 2>/dev/null && return 0
  local hint='REMAT_EXTRA_PACKAGES="python3-torch python3-torchvision" scripts/setup.sh'
  if [[ "${CI:-}" == "true" ]]; then
    echo "$name: FAILED: CI=true and $py cannot import $modules ($hint)"
    exit 1
  fi
  echo "$name: SKIPPED: $py cannot import $modules ($hint)"
  exit 77
}
