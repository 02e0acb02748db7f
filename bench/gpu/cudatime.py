"""Device-resident timing shared by the GPU peers (gemm_peers.py, ensembles.py): CUDA events
around each call, after one warm-up call."""

import torch


def event_median(fn, reps):
    """The median of reps timings of fn() in milliseconds, each between two CUDA events."""
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]
