#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run bench/studies/torch_options.py
# (or, with SOLVERS=0, bench/studies/planning.py) into .gpu/ (ignored by
# git; the device tool carries it with carry: [".gpu"]).
# That machine's image has its own Python (3.12) and torch, and nothing can
# be installed there, so the package's C++ module is compiled here against
# that Python's headers (Ubuntu noble's libpython3.12-dev, fetched from
# archive.ubuntu.com) and linked like build/'s module, and the shared
# libraries it links go along (those the image may lack in fallback/, used
# there only where ldconfig has none). bench/studies/gpu_run.sh runs it there.
# Needs: build/ configured and built (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYVER=${PYVER:-3.12}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
echo "deb [trusted=yes] http://archive.ubuntu.com/ubuntu noble-updates main" \
  >"$work/apt/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$work/apt/sources.list"
  -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$work/apt/lists"
  -o Dir::Cache="$work/apt/cache" -o Debug::NoLocking=1)
apt-get "${apt_opts[@]}" update -qq
(cd "$work" && apt-get "${apt_opts[@]}" download -qq "libpython$PYVER-dev")
dpkg-deb -x "$work"/libpython"$PYVER"-dev_*.deb "$work/root"
tag=$(echo "$PYVER" | tr -d .)
so="_core.cpython-$tag-x86_64-linux-gnu.so"

# The module's compile line, with the other Python's headers.
cmd=$(source scripts/env.sh && "$REMAT_PYTHON" - <<PY
import json, shlex
for e in json.load(open("build/compile_commands.json")):
    if e["file"].endswith("python/bindings.cc"):
        args = shlex.split(e["command"])
        out = []
        skip = False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-c"):
                skip = True
                continue
            if a.startswith("/usr/include/python3"):
                out[-1:] = ["-isystem", "$work/root/usr/include/python$PYVER",
                            "-isystem", "$work/root/usr/include"]
                continue
            out.append(a)
        print(shlex.join(out))
PY
)
for f in bindings core_graph core_run; do
  eval "$cmd -o $work/$f.o -c python/$f.cc" &
done
wait
link=$(cat build/python/CMakeFiles/rematbench_core.dir/link.txt)
for f in bindings core_graph core_run; do
  link=${link//CMakeFiles\/rematbench_core.dir\/$f.cc.o/$work/$f.o}
done
link=$(echo "$link" | sed -E "s#-o [^ ]*_core\.cpython-[^ ]*\.so#-o $work/$so#")
(cd build/python && eval "$link")

rm -rf .gpu/site .gpu/libs.tar.xz
mkdir -p .gpu/site/rematbench/torch "$work/libs/lib" "$work/libs/fallback"
cp python/rematbench/*.py "$work/$so" .gpu/site/rematbench/
cp python/rematbench/torch/*.py .gpu/site/rematbench/torch/
# The zoo's libraries and sac_milp's, as wheels for that Python without
# their dependencies (the image's torch and numpy stay), pinned where
# python/requirements.txt pins them; what the runs never import (other
# platforms' solvers, test suites, transformers' other models) is left
# out, and the rest travels packed (the carry holds 64 MiB: 46 MB packed,
# 200 MB not, when measured).
# SOLVERS=0 leaves out sac_milp's (PuLP, pwlf, scipy; 30 MB packed), which
# bench/studies/planning.py does not need: the carry holds the working tree
# too (12 MB when measured).
libs='transformers|peft'
[[ ${SOLVERS:-1} == 0 ]] || libs+='|pulp|pwlf|scipy'
pins=$(grep -E "^($libs)==" python/requirements.txt)
# Their dependencies at the versions the project's environment resolved
# (the index's latest may not satisfy transformers' own version checks).
deps=$("$(source scripts/env.sh && echo "$REMAT_PYTHON")" -m pip freeze |
  grep -iE '^(huggingface.hub|safetensors|tokenizers|regex|pyyaml|tqdm|accelerate|psutil|packaging|filelock|fsspec)==')
zoo=$work/zoo
# shellcheck disable=SC2086  # pins and deps are lists of requirements
"$(source scripts/env.sh && echo "$REMAT_PYTHON")" -m pip install -q \
  --no-deps --target "$zoo" --python-version "$PYVER" --only-binary=:all: \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux_2_28_x86_64 $pins $deps
rm -rf "$zoo"/pulp/solverdir/cbc/{win,osx} "$zoo"/bin
[[ ! -d $zoo/scipy ]] ||
  find "$zoo/scipy" -name tests -type d -prune -exec rm -rf {} +
for d in "$zoo"/transformers/models/*/; do
  case $(basename "$d") in
    auto|llama|gpt2|bert|vit|t5|qwen2|gemma|mistral|opt|roberta|distilbert) ;;
    *) rm -rf "$d" ;;
  esac
done
tar -C "$zoo" -cf - . | xz -T2 -3 >.gpu/zoo.tar.xz
# Libraries every image has (the C and C++ runtimes) stay; the common ones
# an image may lack go to fallback/.
ldd "$work/$so" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|ld-linux*) ;;
    libz.so*|libgomp.so*|libbz2.so*|libgfortran.so*|libquadmath.so*|\
    libgmp.so*|libmpfr.so*|libudev.so*|libhwloc.so*|libevent*)
      cp -L "$lib" "$work/libs/fallback/" ;;
    *) cp -L "$lib" "$work/libs/lib/" ;;
  esac
done
tar -C "$work/libs" -cf - lib fallback | xz -T2 -6 >.gpu/libs.tar.xz
du -sh .gpu
