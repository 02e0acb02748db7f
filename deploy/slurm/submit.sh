#!/bin/bash
# Submit a whole sharded sweep: populate the kernel cache once, run K shards as a job
# array, then merge the parts, each step starting when the one before succeeded.
#   K=8 GRAPH=... INPUTS=... OUT_DIR=... SHARED_CACHE=... ./submit.sh
set -euo pipefail
K=${K:-8}
GRAPH=${GRAPH:-$HOME/sweep/graph.json}
OUT_DIR=${OUT_DIR:-$HOME/sweep/out}
SHARED_CACHE=${SHARED_CACHE:-$HOME/sweep/kernel-cache}
ARCH=${ARCH:-sm_90}
export K GRAPH OUT_DIR SHARED_CACHE
here=$(cd "$(dirname "$0")" && pwd)

# 1. every kernel the shards need (their sizes: floor(N/K) and ceil(N/K) models), no GPU
populate=$(sbatch --parsable --job-name=widejit-populate --time=00:30:00 --wrap \
  "widejit cache populate '$GRAPH' --arch $ARCH --shards $K --cache-dir '$SHARED_CACHE'")
# 2. the K shards
shards=$(sbatch --parsable --dependency=afterok:"$populate" --array=0-$((K - 1)) \
  --export=ALL "$here/widejit-shards.sbatch")
# 3. the merge, once every array task succeeded
merge=$(sbatch --parsable --dependency=afterok:"$shards" --job-name=widejit-merge --time=00:30:00 --wrap \
  "widejit merge '$OUT_DIR'/part-*.safetensors --out '$OUT_DIR/all.safetensors'")
echo "populate $populate, shards $shards (array 0-$((K - 1))), merge $merge"
