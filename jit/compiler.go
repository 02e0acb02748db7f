package jit

import (
	"fmt"
	"sync"
	"time"

	"github.com/widejit/widejit/triton"
)

// ArtifactStore is the persistent cache as the compiler sees it (cache.Store satisfies it
// through a small adapter): artifacts by key, a miss when absent or damaged.
type ArtifactStore interface {
	GetArtifact(key string) (*Artifact, bool)
	PutArtifact(key string, a *Artifact) error
}

// CompilerOptions configure a Compiler.
type CompilerOptions struct {
	Store   ArtifactStore     // nil: no persistent cache
	Version string            // widejit compiler version, part of every key
	Config  map[string]string // config values that change code generation, part of every key
	Warn    func(msg string)  // cache and fallback warnings; nil: dropped
}

// Stats count what Compile did since the compiler was made.
type Stats struct {
	Hits, Misses int
	CompileTime  time.Duration // front end + codegen of misses
	LoadTime     time.Duration // reading hits from the store
}

// Compiler turns kernel text into artifacts for a target, through the artifact store, and
// loads them on devices. It is safe for concurrent use.
type Compiler struct {
	opts CompilerOptions

	mu     sync.Mutex
	stats  Stats
	loaded map[string]Kernel // key + device -> loaded kernel, for this process
}

func NewCompiler(opts CompilerOptions) *Compiler {
	return &Compiler{opts: opts, loaded: map[string]Kernel{}}
}

// Stats returns a snapshot of the counters.
func (c *Compiler) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Compile returns the artifact of src specialized by spec for target t.
func (c *Compiler) Compile(src Source, spec Spec, t Target) (*Artifact, error) {
	key := c.Key(src, spec, t)
	if c.opts.Store != nil {
		start := time.Now()
		if a, ok := c.opts.Store.GetArtifact(key); ok {
			c.mu.Lock()
			c.stats.Hits++
			c.stats.LoadTime += time.Since(start)
			c.mu.Unlock()
			return a, nil
		}
	}
	start := time.Now()
	f, err := triton.Specialize(src.File, src.Text, src.Fn, spec.Sig, spec.Consts)
	if err != nil {
		return nil, err
	}
	a, err := t.Codegen(f, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: kernel %s: %s backend: %w", src.File, src.Fn, t.Key(), err)
	}
	c.mu.Lock()
	c.stats.Misses++
	c.stats.CompileTime += time.Since(start)
	c.mu.Unlock()
	if c.opts.Store != nil {
		if err := c.opts.Store.PutArtifact(key, a); err != nil && c.opts.Warn != nil {
			c.opts.Warn(fmt.Sprintf("kernel cache: could not store %s: %v", src.Fn, err))
		}
	}
	return a, nil
}

// Load compiles src for dev's target and loads it on dev, once per process.
func (c *Compiler) Load(dev Device, src Source, spec Spec) (Kernel, error) {
	key := c.Key(src, spec, dev.Target())
	memo := fmt.Sprintf("%p/%s", dev, key)
	c.mu.Lock()
	k, ok := c.loaded[memo]
	c.mu.Unlock()
	if ok {
		return k, nil
	}
	a, err := c.Compile(src, spec, dev.Target())
	if err != nil {
		return nil, err
	}
	k, err = dev.Load(a)
	if err != nil {
		return nil, fmt.Errorf("%s: kernel %s: load: %w", src.File, src.Fn, err)
	}
	c.mu.Lock()
	c.loaded[memo] = k
	c.mu.Unlock()
	return k, nil
}
