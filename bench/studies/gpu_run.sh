#!/usr/bin/env bash
# Runs bench/studies/torch_options.py on a lent GPU machine, from the repository
# root there, with .gpu/ (bench/studies/gpu_bundle.sh) carried along:
#   run(command="bash bench/studies/gpu_run.sh", carry=[".gpu"])
# or, given arguments, that script and its options instead (--out $OUT is
# added), e.g. bash bench/studies/gpu_run.sh bench/studies/compiled_profile.py --level 0.5
# or (bundled with SOLVERS=0) T=470 bash bench/studies/gpu_run.sh
# bench/studies/planning.py --device cuda --threads 8
# The issue's GPU table: MODELS=gpt2,resnet50,vit_b_16 EXTRA="--zoo
# llama_lora" (a Llama of about 1B parameters with LoRA, the zoo's gpu size).
# Environment: MODELS (default gpt2), DTYPE (bfloat16), T (seconds the
# bench may take; SIGTERM then, and what was measured is written), D (its
# --deadline: no measurement starts after it), EXTRA (more options).
# Inductor's cache travels both ways: .gpu/inductor.tar.xz.* (if present)
# is unpacked before the run and the cache is packed into $OUT after it
# (15 MiB parts, the size a file from $OUT may have): copy the parts into
# .gpu/ to compile from a warm cache next time.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# A warm machine keeps /tmp: an earlier bundle's files go first.
L=/tmp/gpulib
rm -rf $L /tmp/gpuzoo
mkdir -p $L && tar -C $L -xJf .gpu/libs.tar.xz || exit 3
for f in $L/fallback/*; do
  ldconfig -p | grep -q "$(basename "$f") " || cp "$f" $L/lib/
done
mkdir -p /tmp/gpuzoo && tar -C /tmp/gpuzoo -xJf .gpu/zoo.tar.xz || exit 3
export LD_LIBRARY_PATH=$L/lib PYTHONPATH=$PWD/.gpu/site:/tmp/gpuzoo
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
if ls .gpu/inductor.tar.xz.* >/dev/null 2>&1; then
  cat .gpu/inductor.tar.xz.* | xz -d -T0 | tar -C /tmp -xf - &&
    echo "inductor cache: $(du -sh /tmp/inductor | cut -f1)"
fi
nvidia-smi -L
python3 -c "import torch, torchvision, rematbench; print(torch.__version__, torchvision.__version__, rematbench.__file__, torch.cuda.get_device_name())" || exit 3
start=$(date +%s)
if [ $# -gt 0 ]; then
  timeout -s TERM -k 20 "${T:-420}" python3 "$@" --out "$OUT" 2>&1 |
    tee "$OUT/bench.log"
else
  # shellcheck disable=SC2086  # EXTRA is a list of options
  timeout -s TERM -k 20 "${T:-420}" python3 bench/studies/torch_options.py \
    --device cuda --dtype "${DTYPE:-bfloat16}" --models "${MODELS:-gpt2}" \
    --repeats 3 --warmup 1 --pairs 5 --ladder 3 --compiled-max 2 \
    --calibrate-compiled 1 --solve-threads 8 --deadline "${D:-280}" \
    --out "$OUT" ${EXTRA:-} 2>&1 | tee "$OUT/bench.log"
fi
echo "bench $(($(date +%s) - start)) s"
tar -C /tmp -cf - inductor | xz -T0 -3 | split -b 15M - "$OUT/inductor.tar.xz."
ls -la "$OUT"
