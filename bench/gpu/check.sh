#!/usr/bin/env bash
# GPU check: every kernel-language test kernel and every example on --device cuda, compared
# with the CPU backend and with PyTorch's expected outputs. Needs an NVIDIA driver, Python 3
# with numpy, and a static widejit binary built elsewhere:
#
#   CGO_ENABLED=0 go build -o widejit ./cmd/widejit      # on any machine with Go
#   bash bench/gpu/check.sh ./widejit                       # on the GPU machine, repo root
#
# Tolerances: examples vs PyTorch and vs the CPU: |got - want| <= atol + rtol * max|want| with
# rtol 1e-3, atol 1e-5 (ex2/lg2/rsqrt.approx and a different summation order; widejit's
# tl.dot is full fp32 on both backends). Kernels: see bench/gpu/check_kernels.py.
set -u
WJ=${1:-./widejit}
WORK=${WORK:-/tmp/wj-gpu-check}
mkdir -p "$WORK"
fail=0

echo "== widejit info"
"$WJ" info || fail=1
if ! "$WJ" info | grep -q "cuda: available"; then
  echo "no usable GPU: see the cuda line above"; exit 1
fi

echo "== kernel-language test kernels: cuda vs cpu"
python3 bench/gpu/check_kernels.py --widejit "$WJ" --work "$WORK/kernels" || fail=1

echo "== examples: cuda vs PyTorch (expected.safetensors) and vs the CPU backend"
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -f "$dir/graph.json" ] || continue
  for mode in wide sequential; do
    cpu_out="$WORK/$name.$mode.cpu.safetensors"
    if ! "$WJ" run "$dir/graph.json" --inputs "$dir/inputs.safetensors" --device cpu --mode "$mode" --out "$cpu_out" >/dev/null 2>"$WORK/$name.$mode.cpu.err"; then
      echo "skip $name ($mode): the CPU backend cannot run it: $(tail -1 "$WORK/$name.$mode.cpu.err")"
      continue
    fi
    if "$WJ" run "$dir/graph.json" --inputs "$dir/inputs.safetensors" --device cuda --mode "$mode" \
         --check "$dir/expected.safetensors" --rtol 1e-3 --atol 1e-5 >"$WORK/$name.$mode.cuda.log" 2>&1 &&
       "$WJ" run "$dir/graph.json" --inputs "$dir/inputs.safetensors" --device cuda --mode "$mode" \
         --check "$cpu_out" --rtol 1e-3 --atol 1e-5 >>"$WORK/$name.$mode.cuda.log" 2>&1; then
      echo "ok   $name ($mode)"
    else
      echo "BAD  $name ($mode):"; tail -5 "$WORK/$name.$mode.cuda.log"; fail=1
    fi
  done
done

[ $fail = 0 ] && echo "GPU check passed" || echo "GPU check FAILED"
exit $fail
