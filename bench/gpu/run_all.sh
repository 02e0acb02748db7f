#!/usr/bin/env bash
# Every GPU check and benchmark in one run of under 8 minutes, for a GPU machine without Go
# (PyTorch, Triton and an NVIDIA driver there). Build the static binaries where Go is:
#
#   CGO_ENABLED=0 go build -o widejit ./cmd/widejit
#   CGO_ENABLED=0 go build -o widejit-gpubench ./bench/gpu
#   bash bench/gpu/run_all.sh [./widejit] [./widejit-gpubench]     # repository root, GPU machine
#
# Each step runs under its own time limit and a step that fails or runs out of time is reported
# and the next one runs. The timed steps run one after another; the correctness checks, which
# time nothing, run side by side at the end (545 s in all at most). On a compute capability 9.0
# card (H100, H200), which loads the sm_90a PTX (wgmma) by default, the sm_90 PTX (mma.sync) is
# checked too: widejit-gpubench times and checks the GEMM for both archs, and check_sm90 runs
# check.sh's kernels and fp16/bf16 fixtures with it. Raw outputs go to bench/gpu/results/<card>/
# (card = nvidia-smi's name, spaces as '_'): nvidia-smi clocks and state before and after, the
# logs of every step and the JSON each one writes.
set -u
WJ=${1:-./widejit}
BENCH=${2:-./widejit-gpubench}
PY=${PYTHON:-python3}
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
if [ -z "$card" ]; then
  echo "run_all: nvidia-smi finds no GPU" >&2
  exit 1
fi
out=bench/gpu/results/$card
mkdir -p "$out"

smi() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu,pstate --format=csv >"$out/smi_$1.csv" 2>&1
  nvidia-smi -q -d CLOCK,PERFORMANCE >"$out/smi_$1.txt" 2>&1
}

# step NAME SECONDS COMMAND...: runs COMMAND under a time limit, its output to $out/NAME.log and
# its exit status to $out/NAME.rc (steps may run in the background).
step() {
  local name=$1 limit=$2
  shift 2
  echo "== $name (at most ${limit}s): $*"
  local t0=$SECONDS
  timeout --kill-after=5 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo $rc >"$out/$name.rc"
  { tail -n 25 "$out/$name.log"; echo "== $name: exit $rc after $((SECONDS - t0))s"; } >"$out/$name.tail"
  cat "$out/$name.tail"
}

cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
rm -f "$out"/*.rc

smi before
step gpubench 75 "$BENCH" --reps 30 --json "$out/kernels_gpu.json"
step gemm_peers 100 "$PY" bench/gpu/gemm_peers.py --widejit-json "$out/kernels_gpu.json" --reps 30 --out "$out/gemm_peers.json"
step ensembles_highest 150 "$PY" bench/gpu/ensembles.py --widejit "$WJ" --precision highest --reps 10 --compile-cap 12 --out "$out/ensembles_highest.json"
step ensembles_high 70 "$PY" bench/gpu/ensembles.py --widejit "$WJ" --precision high --reps 10 --compile-cap 0 --out "$out/ensembles_high.json"
smi after
# nothing below is timed: the checks share the GPU
step check 150 bash bench/gpu/check.sh "$WJ" >/dev/null &
if [ "$cc" = "9.0" ]; then # sm_90a is its default: check sm_90 (mma.sync) too
  step check_sm90 120 env ARCH=sm_90 bash bench/gpu/check.sh "$WJ" >/dev/null &
fi
wait
failed=()
for rc in "$out"/*.rc; do
  name=$(basename "$rc" .rc)
  case $name in check*) cat "$out/$name.tail" ;; esac
  [ "$(cat "$rc")" = 0 ] || failed+=("$name (exit $(cat "$rc"))")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_all: failed or out of time: ${failed[*]}"
  exit 1
fi
echo "run_all: every step passed; results in $out"
