package jit

import (
	"fmt"
	"sync"
	"time"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/triton"
)

// CompilerOptions configure a Compiler.
type CompilerOptions struct {
	Store   *cache.Store // the persistent artifact store; nil: cache.Off() (nothing kept)
	Version string       // widejit compiler version, part of every key
	// BackendOptions are the options the target's backend was opened with (--backend-opt
	// k=v): they may change its code, so they are part of every key.
	BackendOptions map[string]string
	Warn           func(msg string) // cache warnings; nil: dropped
}

// Stats count what the compiler's store saw: artifacts served (hits) and compiled (misses),
// and the time spent on each.
type Stats struct {
	Hits, Misses int
	CompileTime  time.Duration // front end + codegen of misses
	LoadTime     time.Duration // reading the store
}

// Compiler turns kernel text into artifacts for a target, through the artifact store, and
// loads them on devices. It is safe for concurrent use.
type Compiler struct {
	opts  CompilerOptions
	store *cache.Store

	mu     sync.Mutex
	loaded map[string]Kernel // device + key -> loaded kernel, for this process
}

func NewCompiler(opts CompilerOptions) *Compiler {
	s := opts.Store
	if s == nil {
		s = cache.Off()
	}
	return &Compiler{opts: opts, store: s, loaded: map[string]Kernel{}}
}

// Store is the artifact store the compiler reads and fills.
func (c *Compiler) Store() *cache.Store { return c.store }

// Stats returns a snapshot of the store's counters.
func (c *Compiler) Stats() Stats {
	k := c.store.Counters()
	return Stats{Hits: int(k.Hits), Misses: int(k.Misses), CompileTime: k.CompileTime, LoadTime: k.LoadTime}
}

// Compile returns the artifact of src specialized by spec for target t, from the store when
// it is there, else compiled and stored.
func (c *Compiler) Compile(src Source, spec Spec, t Target) (*Artifact, error) {
	key, err := c.Key(src, spec, t)
	if err != nil {
		return nil, err
	}
	if rec, ok := c.store.Get(key); ok {
		return artifactFromRecord(rec), nil
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
	c.store.RecordCompile(time.Since(start))
	if err := c.store.Put(key, recordFromArtifact(a)); err != nil && c.opts.Warn != nil {
		c.opts.Warn(fmt.Sprintf("kernel cache: could not store %s: %v", src.Fn, err))
	}
	return a, nil
}

// Load compiles src for dev's target and loads it on dev, once per process.
func (c *Compiler) Load(dev Device, src Source, spec Spec) (Kernel, error) {
	key, err := c.Key(src, spec, dev.Target())
	if err != nil {
		return nil, err
	}
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

// The artifact's kind and entry name ride in the record's metadata under these keys.
const (
	metaArtifactKind = "artifact_kind"
	metaEntry        = "entry"
)

func recordFromArtifact(a *Artifact) *cache.Record {
	meta := map[string]string{metaArtifactKind: a.Kind, metaEntry: a.Name}
	for k, v := range a.Meta {
		meta[k] = v
	}
	return &cache.Record{Name: a.Name, Backend: a.Kind, Target: a.Target, Meta: meta, Payload: a.Payload}
}

func artifactFromRecord(r *cache.Record) *Artifact {
	a := &Artifact{Kind: r.Meta[metaArtifactKind], Name: r.Meta[metaEntry], Target: r.Target, Payload: r.Payload, Meta: map[string]string{}}
	for k, v := range r.Meta {
		if k != metaArtifactKind && k != metaEntry {
			a.Meta[k] = v
		}
	}
	return a
}
