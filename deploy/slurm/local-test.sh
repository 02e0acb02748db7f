#!/bin/bash
# Runs the Slurm path of docs/cluster.md on a single-node Slurm started here, then stops it:
# submit.sh (DEVICE=cpu: no GPU requested) populates the kernel cache, runs a 3-shard array
# and merges the parts; the merged tensors must be bit-identical to an unsharded run's.
#   deploy/slurm/local-test.sh [WIDEJIT_BINARY]      (default: widejit on PATH)
# Needs Debian's slurm-wlm and munge (.ci/setup installs them) and root, or passwordless
# sudo (slurmd runs jobs as their users). Everything it starts (munged, slurmctld, slurmd) lives in a temporary
# directory, on ports of its own, and is stopped on exit. GRAPH and INPUTS pick the sweep
# (default examples/sweep, N=4); WAIT bounds each wait in seconds (default 300).
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin # the daemons live in sbin
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${1:-$(command -v widejit || true)}
GRAPH=${GRAPH:-$repo/examples/sweep/graph.json}
INPUTS=${INPUTS:-$repo/examples/sweep/inputs.safetensors}
WAIT=${WAIT:-300}
K=3

die() { echo "local-test: $*" >&2; exit 1; }
for tool in munged mungekey slurmctld slurmd sbatch squeue sinfo scontrol python3; do
  command -v "$tool" >/dev/null || die "$tool not found: apt-get install slurm-wlm munge (see .ci/setup)"
done
[ -x "$bin" ] || die "no widejit binary: give its path, or put widejit on PATH"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
if [ "$(id -u)" != 0 ]; then # slurmd runs each job as its user: it needs root
  sudo -n true 2>/dev/null || die "run as root, or with passwordless sudo: slurmd runs each job as its user"
  exec sudo -n --preserve-env=GRAPH,INPUTS,WAIT,KEEP,WIDEJIT_THREADS "$0" "$bin"
fi

work=$(mktemp -d /tmp/widejit-slurm.XXXXXX)
chmod 755 "$work"
daemons=() # started in the foreground, in the background: stopped and reaped here
cleanup() {
  for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do
    kill "${daemons[i]}" 2>/dev/null || true
    wait "${daemons[i]}" 2>/dev/null || true
  done
  if [ "${KEEP:-}" = "" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

# bounded: waitfor SECONDS WHAT COMMAND...
waitfor() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq "$secs"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  die "timed out after ${secs}s waiting for $what"
}

# munge: a fresh key and socket of our own
mkdir -p "$work/munge"
chmod 700 "$work/munge"
mungekey --create --keyfile "$work/munge/munge.key" --force
chmod 400 "$work/munge/munge.key"
munged --foreground --force --key-file "$work/munge/munge.key" --socket "$work/munge/munge.sock" \
  --pid-file "$work/munged.pid" --log-file "$work/munge/munged.log" --seed-file "$work/munge/seed" &>"$work/munged.out" &
daemons+=($!)
waitfor 10 munged test -S "$work/munge/munge.sock"

# slurm.conf for this host as slurmd sees it (CPUs, memory), on two free ports
node=$(slurmd -C | head -1)
name=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<<"$node")
ports=($(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])'))
mkdir -p "$work/state" "$work/spool" "$work/jobs"
chmod 755 "$work/jobs"
cat >"$work/slurm.conf" <<CONF
ClusterName=widejit-local
SlurmctldHost=$name(127.0.0.1)
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.sock
SlurmUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SchedulerType=sched/backfill
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=$name Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" &>"$work/slurmctld.out" &
daemons+=($!)
waitfor "$WAIT" slurmctld scontrol ping
slurmd -D -f "$SLURM_CONF" &>"$work/slurmd.out" &
daemons+=($!)
idle() { sinfo -h -n "$name" -o %T | grep -Eq '^(idle|mixed|allocated)'; }
waitfor "$WAIT" "node $name to come up (see $work/slurmd.log)" idle

# the sweep, as docs/cluster.md submits it; the jobs find widejit on PATH
mkdir -p "$work/bin"
ln -s "$bin" "$work/bin/widejit"
export PATH=$work/bin:$PATH WIDEJIT_THREADS=${WIDEJIT_THREADS:-2}
cd "$work/jobs"
out=$(K=$K DEVICE=cpu GRAPH=$GRAPH INPUTS=$INPUTS OUT_DIR=$work/out SHARED_CACHE=$work/cache \
  SBATCH_OPTS="--cpus-per-task=1 --time=00:10:00" "$here/submit.sh")
echo "$out"
jobs=$(sed -n 's/^populate \([0-9]*\), shards \([0-9]*\) .*, merge \([0-9]*\)$/\1,\2,\3/p' <<<"$out")
[ -n "$jobs" ] || die "submit.sh printed no job ids"
done_all() { local q; q=$(squeue -h -j "$jobs" -o %i) && [ -z "$q" ]; }
stuck() { squeue -h -o '%i %r' | grep -Eq 'DependencyNeverSatisfied|PartitionConfig|PartitionNodeLimit|PartitionTimeLimit|BadConstraints'; }
for _ in $(seq "$WAIT"); do
  done_all && break
  if stuck; then
    tail -n +1 "$work"/jobs/*.out "$work"/jobs/*.log 2>/dev/null || true
    squeue -o '%i %j %T %r' >&2
    die "a job failed, or cannot run here, and will never finish"
  fi
  sleep 1
done
done_all || die "the sweep did not finish within ${WAIT}s"
[ -s "$work/out/all.safetensors" ] || {
  tail -n +1 "$work"/jobs/*.out "$work"/jobs/*.log 2>/dev/null || true
  die "no merged output"
}
for i in $(seq 0 $((K - 1))); do
  [ -s "$work/out/part-$i.safetensors" ] || die "shard $i wrote no part"
done

# the unsharded run, same threads, and the comparison: every tensor's bytes
"$bin" run "$GRAPH" --inputs "$INPUTS" --device cpu --no-cache --out "$work/full.safetensors" >/dev/null
python3 - "$work/out/all.safetensors" "$work/full.safetensors" <<'PY'
import json, struct, sys

def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    head.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in head.items()}

merged, full = tensors(sys.argv[1]), tensors(sys.argv[2])
if sorted(merged) != sorted(full):
    sys.exit(f"merged tensors {sorted(merged)} != unsharded {sorted(full)}")
for k in full:
    if merged[k] != full[k]:
        sys.exit(f"tensor {k}: merged and unsharded differ (dtype/shape {merged[k][:2]} vs {full[k][:2]})")
print(f"local-test: merged output of {len(full)} tensors is bit-identical to the unsharded run")
PY
