package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool runs a launch's work on the launching goroutine and on helper goroutines. A helper
// that finishes lingers, spinning, for linger before it exits, so back-to-back launches (a
// model's layers, repeated runs) find it running: waking a parked thread costs 30 µs or more
// on a VM, as much as a small launch's whole work. OpenMP runtimes spin for the same reason.
// A helper that sees no work within linger exits, so an idle device holds no goroutines and
// needs no Close.
type pool struct {
	job   atomic.Pointer[poolJob] // the newest launch; nil once it is done
	alive atomic.Int32            // helpers started and not exited

	// Each helper holds the lowest free worker number from 1 (the launcher is 0) for its
	// life, so a kernel gives a worker the same frame launch after launch: the frame's tiles
	// stay in that core's cache. Handing frames to whichever worker asked first cost 28% more
	// time per program on two workers.
	mu    sync.Mutex
	taken []bool // taken[w-1]: worker number w is held
}

// linger is how long a helper spins for the next job before it exits.
const linger = 200 * time.Microsecond

// poolWork is a launch's work: run is called by the launcher (worker 0) and by helpers.
type poolWork interface{ run(worker int) }

// poolJob is one launch's work: run is called by the launcher and by up to helpers helpers.
type poolJob struct {
	work    poolWork
	helpers int32
	joined  atomic.Int32
	// active counts the helpers inside run; closed is added once the launcher's own run
	// returns, after which no helper enters. The decrement that leaves exactly closed signals
	// done, which the launcher waits on if helpers were still inside.
	active atomic.Int64
	done   chan struct{}
}

const closed = 1 << 40

// do runs w.run(0) on the calling goroutine and w.run(worker) on up to helpers more
// goroutines, and returns when every call has returned. Helpers busy with another launch
// join this one when they are done, so concurrent launches share the pool.
func (p *pool) do(helpers int, w poolWork) {
	j := &poolJob{work: w, helpers: int32(helpers), done: make(chan struct{}, 1)}
	p.job.Store(j)
	for n := p.alive.Load(); n < int32(helpers); n = p.alive.Load() {
		if p.alive.CompareAndSwap(n, n+1) {
			go p.helper(j)
		}
	}
	w.run(0)
	if j.active.Add(closed) != closed {
		j.wait()
	}
	p.job.CompareAndSwap(j, nil) // drop the launch's buffers
}

// wait returns once no helper is inside run: spinning briefly (the last program of another
// worker is usually short), then blocking.
func (j *poolJob) wait() {
	until := time.Now().Add(linger)
	for j.active.Load() != closed {
		if time.Now().After(until) {
			<-j.done
			return
		}
		runtime.Gosched()
	}
}

// join runs j's work as worker if j still takes helpers.
func (j *poolJob) join(worker int) {
	if j.joined.Add(1) > j.helpers {
		return
	}
	if j.active.Add(1)&closed == 0 {
		j.work.run(worker)
	}
	if j.active.Add(-1) == closed {
		select {
		case j.done <- struct{}{}:
		default: // the launcher saw the end without waiting, or a signal is pending
		}
	}
}

// helper joins j and every job stored while it lingers. It was counted in alive by the
// launcher that started it.
func (p *pool) helper(j *poolJob) {
	worker := p.takeNumber()
	defer p.dropNumber(worker)
	for j != nil {
		j.join(worker)
		j = p.next(j)
	}
}

// next spins until a job other than last is stored and returns it, or leaves alive and
// returns nil after linger.
func (p *pool) next(last *poolJob) *poolJob {
	until := time.Now().Add(linger)
	for {
		if j := p.job.Load(); j != nil && j != last {
			return j
		}
		if time.Now().After(until) {
			p.alive.Add(-1)
			// A launcher that counted this helper just before the decrement stored its job
			// first: take it (counted again; at worst one helper more than asked).
			if j := p.job.Load(); j != nil && j != last {
				p.alive.Add(1)
				return j
			}
			return nil
		}
		runtime.Gosched()
	}
}

func (p *pool) takeNumber() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.taken {
		if !t {
			p.taken[i] = true
			return i + 1
		}
	}
	p.taken = append(p.taken, true)
	return len(p.taken)
}

func (p *pool) dropNumber(w int) {
	p.mu.Lock()
	p.taken[w-1] = false
	p.mu.Unlock()
}
