#!/bin/bash
# Submit a whole sharded sweep: populate the kernel cache once, run K shards as a job
# array, then merge the parts, each step starting when the one before succeeded.
#   K=8 GRAPH=... INPUTS=... OUT_DIR=... SHARED_CACHE=... ./submit.sh
# DEVICE=cuda (the default) asks for GPUS GPUs per shard (default 1) and populates PTX for
# ARCH (default sm_90); DEVICE=cpu asks for none and populates the CPU's kernels, so the
# sweep runs on a CPU-only cluster. Extra sbatch options for every job: SBATCH_OPTS.
set -euo pipefail
K=${K:-8}
GRAPH=${GRAPH:-$HOME/sweep/graph.json}
OUT_DIR=${OUT_DIR:-$HOME/sweep/out}
SHARED_CACHE=${SHARED_CACHE:-$HOME/sweep/kernel-cache}
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = cpu ]; then
  GPUS=${GPUS:-0}
  arch=()
else
  GPUS=${GPUS:-1}
  arch=(--arch "${ARCH:-sm_90}")
fi
gpus=()
if [ "$GPUS" -gt 0 ]; then
  gpus=(--gpus="$GPUS")
fi
read -r -a opts <<<"${SBATCH_OPTS:-}"
export K GRAPH OUT_DIR SHARED_CACHE DEVICE
here=$(cd "$(dirname "$0")" && pwd)

# 1. every kernel the shards need (their sizes: floor(N/K) and ceil(N/K) models), no GPU
populate=$(sbatch --parsable "${opts[@]}" --job-name=widejit-populate --time=00:30:00 --wrap \
  "widejit cache populate '$GRAPH' ${arch[*]} --shards $K --cache-dir '$SHARED_CACHE'")
# 2. the K shards
shards=$(sbatch --parsable "${opts[@]}" "${gpus[@]}" --dependency=afterok:"$populate" --array=0-$((K - 1)) \
  --export=ALL "$here/widejit-shards.sbatch")
# 3. the merge, once every array task succeeded
merge=$(sbatch --parsable "${opts[@]}" --dependency=afterok:"$shards" --job-name=widejit-merge --time=00:30:00 --wrap \
  "widejit merge '$OUT_DIR'/part-*.safetensors --out '$OUT_DIR/all.safetensors'")
echo "populate $populate, shards $shards (array 0-$((K - 1))), merge $merge"
