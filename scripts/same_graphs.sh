#!/usr/bin/env bash
# Checks that two remat binaries generate the same graphs: every generator at
# its defaults and at settings that give each parameter a value of its own,
# written as native JSON and compared byte for byte, with each generator's
# refusals of bad values (their messages compared too) and the generators'
# `remat list --json` listing. For refactorings of the generators
# (docs/report.md, "Comparing and plotting").
#
# Usage: scripts/same_graphs.sh OLD_REMAT NEW_REMAT
# Exit status: 0 the same, 1 a difference, 2 bad usage.
set -euo pipefail
if [[ $# -ne 2 || ! -x $1 || ! -x $2 ]]; then
  echo "usage: $0 OLD_REMAT NEW_REMAT (two remat executables)" >&2
  exit 2
fi
specs=(
  chain:n=16
  chain:n=5,mem=2MiB,cost=7
  lstm:
  lstm:steps=3,hidden=16,batch=2,input=5,classes=4,dtype=fp16
  mlp:
  mlp:layers=3,width=64,batch=8,input=10,classes=5,dtype=bf16
  mlp:layers=0
  pspnet:
  pspnet:backbone=resnet101,batch=1,image=64,classes=5,dtype=fp16
  random_layered:
  random_layered:n=300,seed=3,width=0.5,spread=0.1,density=0.5,skip=0.3,mem_min=1KiB,mem_max=2MiB,cost_max=10
  resnet:
  resnet:depth=18,batch=2,image=64,classes=10,dtype=bf16
  resnet:depth=56,block=bottleneck,width=8,image=32
  resnet:depth=164,block=basic,image=32
  resnet:depth=20,image=32
  transformer:
  transformer:layers=2,d_model=64,heads=4,seq=16,batch=2,ffn=100,decoder=1,vocab=50,dtype=fp16
  unet:
  unet:levels=3,base=8,batch=1,image=92,channels=1,classes=3,padding=valid,norm=none,dtype=bf16
  vgg:
  vgg:depth=11,batch=2,image=32,classes=10,dtype=fp16
  vgg:depth=19,image=64
)
# Refused: a value below a minimum, an unknown choice, a missing required
# parameter, a bad byte count, a fraction out of range, a generator's own
# check.
refused=(
  chain:
  chain:n=0
  chain:n=4,mem=2XB
  mlp:dtype=fp8
  random_layered:width=2
  random_layered:mem_min=9,mem_max=8
  resnet:depth=7
  resnet:block=wide
  transformer:d_model=10,heads=3
  transformer:decoder=2
  unet:levels=31
  vgg:depth=12
  vgg:image=16
)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for which in old new; do
  remat=$1
  [[ $which == new ]] && remat=$2
  mkdir -p "$out/$which"
  "$remat" list --json | "${REMAT_PYTHON:-python3}" -c \
    'import json, sys; print(json.dumps(json.load(sys.stdin)["generators"], indent=1))' \
    >"$out/$which/list.json"
  for i in "${!specs[@]}"; do
    "$remat" graph convert "${specs[$i]}" --to json -o "$out/$which/$i.json" \
      >/dev/null
  done
  for i in "${!refused[@]}"; do
    if "$remat" graph convert "${refused[$i]}" --to json -o /dev/null \
        2>"$out/$which/refused$i.txt"; then
      echo "$which: ${refused[$i]} was not refused" >&2
      status=1
    fi
  done
done
for i in "${!specs[@]}"; do
  if cmp -s "$out/old/$i.json" "$out/new/$i.json"; then
    echo "same: ${specs[$i]} ($(wc -c <"$out/new/$i.json") bytes)"
  else
    echo "DIFFERENT: ${specs[$i]}"
    status=1
  fi
done
for i in "${!refused[@]}"; do
  if cmp -s "$out/old/refused$i.txt" "$out/new/refused$i.txt"; then
    echo "same refusal: ${refused[$i]}: $(head -c 120 "$out/new/refused$i.txt")"
  else
    echo "DIFFERENT refusal: ${refused[$i]}"
    diff "$out/old/refused$i.txt" "$out/new/refused$i.txt" || true
    status=1
  fi
done
if cmp -s "$out/old/list.json" "$out/new/list.json"; then
  echo "same: remat list --json generators"
else
  echo "DIFFERENT: remat list --json generators"
  diff "$out/old/list.json" "$out/new/list.json" || true
  status=1
fi
exit $status
