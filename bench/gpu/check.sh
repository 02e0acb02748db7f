#!/usr/bin/env bash
# GPU check: every kernel-language test kernel and every example on --device cuda, compared
# with the CPU backend and with PyTorch's expected outputs; every fixture of the Go tests against
# PyTorch's outputs; then every example on 1, 2 and 3
# streams and on every GPU (--device cuda:all), compared bit for bit. Needs an NVIDIA driver,
# Python 3 with numpy, and a static widejit binary built elsewhere:
#
#   CGO_ENABLED=0 go build -o widejit ./cmd/widejit      # on any machine with Go
#   bash bench/gpu/check.sh ./widejit                       # on the GPU machine, repo root
#   ARCH=sm_90 bash bench/gpu/check.sh ./widejit            # the cuda runs with --backend-opt arch=sm_90
#
# ARCH picks the PTX arch of every cuda run (the cuda backend's option; default: the device's)
# and checks what the arch changes: the kernel-language kernels and the fp16/bf16 fixtures
# (sm_90a's wgmma, an H100's default, against sm_90's mma.sync, serves fp16/bf16 K loops and
# TF32 Linear ones only; fp32 kernels at the default precision differ in the PTX ISA alone),
# leaving out the fp32 examples, the fp32 fixtures and the streams-and-devices part.
#
# Tolerances: examples vs PyTorch and vs the CPU: |got - want| <= atol + rtol * max|want| with
# rtol 1e-3, atol 1e-5 (ex2/lg2/rsqrt.approx and a different summation order; widejit's
# tl.dot is full fp32 on both backends). Kernels: see bench/gpu/check_kernels.py.
set -u
WJ=${1:-./widejit}
ARCH=${ARCH:-}
WORK=${WORK:-/tmp/wj-gpu-check${ARCH:+-$ARCH}}
mkdir -p "$WORK"
fail=0
CO=() # the cuda runs' backend options
[ -n "$ARCH" ] && CO=(--backend-opt "arch=$ARCH")
# The examples and fixtures are checked JOBS at a time (independent processes, one GPU): each
# writes its verdict to a file, and verdicts prints them in order once all have finished.
JOBS=${JOBS:-8}
rm -f "$WORK"/verdict.*
# bounded FILE COMMAND...: runs COMMAND in the background, its output to FILE, at most JOBS at once.
bounded() {
  local file=$1
  shift
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  "$@" >"$file" 2>&1 &
}
# verdicts KIND: waits for the checks of KIND, prints their verdicts, fails on any BAD.
verdicts() {
  wait
  local f
  for f in "$WORK"/verdict."$1".*; do
    [ -f "$f" ] || continue
    cat "$f"
    grep -q '^BAD' "$f" && fail=1
  done
  return 0
}

echo "== widejit info${ARCH:+ (cuda with arch=$ARCH)}"
"$WJ" info ${CO[@]+"${CO[@]}"} || fail=1
if ! "$WJ" info ${CO[@]+"${CO[@]}"} | grep -q "cuda: available"; then
  echo "no usable GPU: see the cuda line above"; exit 1
fi

echo "== kernel-language test kernels: cuda vs cpu"
python3 bench/gpu/check_kernels.py --widejit "$WJ" --work "$WORK/kernels" ${ARCH:+--arch "$ARCH"} || fail=1

echo "== examples: cuda vs PyTorch (expected.safetensors) and vs the CPU backend"
[ -n "$ARCH" ] && echo "(left out with ARCH)"
# check_example NAME MODE: the CPU backend's outputs, then the cuda ones against PyTorch's and the CPU's.
check_example() {
  local name=$1 mode=$2 dir=examples/$1
  local cpu_out="$WORK/$name.$mode.cpu.safetensors"
  if ! "$WJ" run "$dir/graph.json" --inputs "$dir/inputs.safetensors" --device cpu --mode "$mode" --out "$cpu_out" >/dev/null 2>"$WORK/$name.$mode.cpu.err"; then
    echo "skip $name ($mode): the CPU backend cannot run it: $(tail -1 "$WORK/$name.$mode.cpu.err")"
    return
  fi
  if "$WJ" run "$dir/graph.json" --inputs "$dir/inputs.safetensors" --device cuda ${CO[@]+"${CO[@]}"} --mode "$mode" \
       --check "$dir/expected.safetensors" --rtol 1e-3 --atol 1e-5 >"$WORK/$name.$mode.cuda.log" 2>&1 &&
     "$WJ" run "$dir/graph.json" --inputs "$dir/inputs.safetensors" --device cuda ${CO[@]+"${CO[@]}"} --mode "$mode" \
       --check "$cpu_out" --rtol 1e-3 --atol 1e-5 >>"$WORK/$name.$mode.cuda.log" 2>&1; then
    echo "ok   $name ($mode)"
  else
    echo "BAD  $name ($mode):"; tail -5 "$WORK/$name.$mode.cuda.log"
  fi
}
for dir in examples/*/; do
  [ -n "$ARCH" ] && break
  name=$(basename "$dir")
  [ -f "$dir/graph.json" ] || continue
  for mode in wide sequential; do
    bounded "$WORK/verdict.example.$name.$mode" check_example "$name" "$mode"
  done
done
verdicts example

echo "== fixtures: every PyTorch fixture of the Go tests (lowering/testdata) on cuda vs its expected outputs"
# The fixtures the CPU backend is tested on (TestCPUFixtures, TestConvFixtures, ...): fp32 at the
# examples' tolerances, bf16 at PyTorch's own (rtol 1.6e-2); the fp16 ones of half/ (expected:
# fp32 on the rounded values, rounded to fp16) at 2e-3: the reference's rounding, widejit's,
# and those of the intermediates (lowering's TestHalfFixtures* derive theirs from the
# reduction length).
# check_fixture DIR NAME RTOL: the fixture on cuda against its expected outputs.
check_fixture() {
  local dir=$1 name=$2 rtol=$3
  local log="$WORK/fixture.${name//\//.}.log"
  if "$WJ" run "$dir/graph.json" --inputs "$dir/inputs.safetensors" --device cuda ${CO[@]+"${CO[@]}"} \
       --check "$dir/expected.safetensors" --rtol "$rtol" --atol 1e-5 >"$log" 2>&1; then
    echo "ok   $name"
  else
    echo "BAD  $name:"; tail -5 "$log"
  fi
}
for dir in lowering/testdata/*/*/; do
  [ -f "$dir/expected.safetensors" ] || continue
  name=${dir#lowering/testdata/}; name=${name%/}
  rtol=1e-3
  case $name in
    *bf16* | *bfloat16*) rtol=1.6e-2 ;;
    *float16*) rtol=2e-3 ;;
    *) [ -n "$ARCH" ] && continue ;;
  esac
  bounded "$WORK/verdict.fixture.${name//\//.}" check_fixture "$dir" "$name" "$rtol"
done
verdicts fixture

if [ -n "$ARCH" ]; then
  [ $fail = 0 ] && echo "GPU check passed (arch=$ARCH)" || echo "GPU check FAILED (arch=$ARCH)"
  exit $fail
fi

echo "== streams and devices: --streams 2 and 3, and --device cuda:all, write the bytes of --streams 1"
# The models of a run split over streams (and devices) run the same kernels on the same data:
# the outputs must be bit-identical. Each variant's --explain and a traced run (a track per
# device and stream, for Perfetto) are left under $WORK. The examples run JOBS at a time, like
# the sections above, so the timing lines (--repeat 20, untraced) share the GPU with other runs
# and say little; the bytes compared do not depend on it.
#
# check_streams NAME: the example on 1 stream, then on 2 and 3 streams and on every GPU, bit for bit.
check_streams() {
  local name=$1 dir=examples/$1
  local base=(run "$dir/graph.json" --inputs "$dir/inputs.safetensors")
  local one="$WORK/$name.streams1.safetensors"
  if ! "$WJ" "${base[@]}" --device cuda --streams 1 --repeat 20 --out "$one" >"$WORK/$name.streams1.log" 2>&1; then
    echo "BAD  $name (--streams 1):"; tail -5 "$WORK/$name.streams1.log"
    return
  fi
  echo "     $name (--streams 1): $(grep '^timing:' "$WORK/$name.streams1.log")"
  local variant tag out
  for variant in "--device cuda --streams 2" "--device cuda --streams 3" "--device cuda:all"; do
    tag=${variant//[^a-z0-9]/}
    out="$WORK/$name.$tag.safetensors"
    # shellcheck disable=SC2086 # the variant is several flags
    if "$WJ" "${base[@]}" $variant --repeat 20 --explain --out "$out" >"$WORK/$name.$tag.log" 2>&1 &&
       cmp -s "$one" "$out" &&
       "$WJ" "${base[@]}" $variant --trace "$WORK/$name.$tag.trace.json" >>"$WORK/$name.$tag.log" 2>&1; then
      echo "ok   $name ($variant): $(grep '^timing:' "$WORK/$name.$tag.log" | head -1)"
    else
      echo "BAD  $name ($variant): other outputs than --streams 1, or:"; tail -5 "$WORK/$name.$tag.log"
    fi
  done
}
for dir in examples/*/; do
  [ -f "$dir/graph.json" ] || continue
  name=$(basename "$dir")
  bounded "$WORK/verdict.streams.$name" check_streams "$name"
done
verdicts streams

[ $fail = 0 ] && echo "GPU check passed" || echo "GPU check FAILED"
exit $fail
