package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// DefaultLockWait is how long Open waits for a directory held by another process.
const DefaultLockWait = 5 * time.Second

// Badger table settings; the pre-open table check must read tables with the same ones.
const (
	tableCompression = options.Snappy
	tableBlockSize   = 4 << 10
)

// MinFreeBytes is the free space a store keeps on its filesystem. Badger writes its value
// log, memtables and tables through memory maps of sparse files, where a full disk is not an
// error but a SIGBUS that kills the process; below this much free space (Open, and before
// every Put) the store stops writing: it reads the directory and keeps new records in memory
// for the process, with a warning.
const MinFreeBytes = 64 << 20

// Options tune Open. The zero value is right for widejit runs.
type Options struct {
	// Warn receives one line per problem (busy or damaged directory, corrupt record, lost
	// writes). Nil prints "widejit: warning: ..." to standard error.
	Warn func(msg string)
	// LockWait bounds the wait for a directory another process holds; 0 means DefaultLockWait,
	// negative means do not wait.
	LockWait time.Duration
	// ReadOnly opens the directory for reading only: it is never written (no lock file is
	// created; a shared lock is taken when the lock file exists), hits are read from it and
	// Put keeps records in memory for this process. Open also chooses it when the directory
	// is not writable (a shared, pre-populated cache on a cluster).
	ReadOnly bool
	// InMemory keeps everything in memory and never touches a directory.
	InMemory bool

	// Test knobs: small sizes make tests produce .sst and .vlog files quickly.
	memTableSize   int64
	valueThreshold int64
}

// Mode says how a Store is backed.
type Mode string

const (
	ModeReadWrite Mode = "read-write" // the directory, exclusively
	ModeReadOnly  Mode = "read-only"  // the directory, shared; Put fails
	ModeMemory    Mode = "memory"     // Options.InMemory
	ModeOff       Mode = "off"        // cache.Off(): stores nothing
	// ModeFallback: the directory was busy or unusable; reads come from a read-only view of it
	// when one could be had, writes stay in memory until Close writes them back.
	ModeFallback Mode = "fallback"
)

// ErrReadOnly was returned by Put on a read-only store; such a store now keeps what is put in
// memory for the process, and Put no longer fails.
var ErrReadOnly = errors.New("cache store is read-only")

// A Store is an open cache. Its methods are safe for concurrent use.
type Store struct {
	dir   string // the cache directory
	dbDir string // the Badger store in it: <dir>/kernels, or <dir> for a legacy read-only one
	opts  Options
	mode  Mode
	lock  *dirLock
	db    *badger.DB
	dbRO  bool

	mu      sync.Mutex
	mem     map[string][]byte // records of a memory store, or pending writes of a fallback
	closed  bool
	warned  map[string]bool
	damaged string      // where a damaged directory was moved, if Open moved one
	unread  error       // why a read-only store reads nothing from its directory (ReadError)
	noSpace atomic.Bool // the filesystem filled up: Put keeps records in memory from now on

	badgerLogs  atomic.Int64 // Badger messages forwarded after Open (capped)
	badgerQuiet atomic.Bool  // set while opening: an Open failure is reported by us, once

	hits, misses, corrupt, puts atomic.Int64
	loadNanos, compileNanos     atomic.Int64
}

// DefaultDir is $XDG_CACHE_HOME/widejit, else ~/.cache/widejit.
func DefaultDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		if home, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(home, ".cache")
		} else {
			base = os.TempDir()
		}
	}
	return filepath.Join(base, "widejit")
}

// Off returns a store that stores nothing but still counts misses and compile time
// (for --no-cache).
func Off() *Store {
	return &Store{mode: ModeOff, mem: map[string][]byte{}, warned: map[string]bool{}}
}

// Open opens (creating it if needed) the cache in dir ("" means DefaultDir). It does not fail
// for a busy, damaged or unusable directory: it falls back as described in the package
// documentation and says so through Options.Warn. An error means the options are invalid, or
// dir is a non-empty directory that is not a widejit cache (*ForeignDirError; nothing in it
// was touched).
func Open(dir string, opts Options) (*Store, error) {
	if opts.ReadOnly && opts.InMemory {
		return nil, errors.New("cache: ReadOnly and InMemory are exclusive")
	}
	if opts.LockWait == 0 {
		opts.LockWait = DefaultLockWait
	}
	if opts.LockWait < 0 {
		opts.LockWait = 0
	}
	s := &Store{opts: opts, mem: map[string][]byte{}, warned: map[string]bool{}}
	if opts.InMemory {
		s.mode = ModeMemory
		return s, nil
	}
	if dir == "" {
		dir = DefaultDir()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s.dir = dir
	s.dbDir = filepath.Join(dir, kernelsName)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.fallback(fmt.Sprintf("cannot use cache dir %s (%v); using an in-memory cache for this run", dir, err))
			return s, nil
		}
	}
	_, legacy, err := inspectDir(dir)
	var foreign *ForeignDirError
	if errors.As(err, &foreign) {
		return nil, err
	}
	if err != nil && opts.ReadOnly {
		// not a fallback: that would write its records back at Close
		s.mode = ModeReadOnly
		if !errors.Is(err, os.ErrNotExist) {
			s.unread = err
		}
		s.warnOnce("unreadable", fmt.Sprintf("cannot read cache dir %s (%v); using an in-memory cache for this run", dir, err))
		return s, nil
	}
	if err != nil {
		s.fallback(fmt.Sprintf("cannot use cache dir %s (%v); using an in-memory cache for this run", dir, err))
		return s, nil
	}
	if !opts.ReadOnly && !dirWritable(dir) {
		s.opts.ReadOnly = true
		s.warnOnce("read-only", fmt.Sprintf("cache dir %s is not writable; using it read-only (kernels it lacks are compiled in memory for this run)", dir))
	}
	if !s.opts.ReadOnly && s.lowOnSpace(dir, 0) {
		s.opts.ReadOnly = true
	}
	if s.opts.ReadOnly {
		s.openReadOnly(legacy)
		return s, nil
	}
	lock, err := acquireLock(filepath.Join(dir, lockFileName), !opts.ReadOnly, opts.LockWait)
	if err != nil {
		if !errors.Is(err, errLockBusy) {
			s.fallback(fmt.Sprintf("cannot lock cache dir %s (%v); using an in-memory cache for this run", dir, err))
			return s, nil
		}
		s.openBusy()
		return s, nil
	}
	s.lock = lock
	if err := s.openWritableLocked(); err != nil {
		s.lock.release()
		s.lock = nil
		if errors.Is(err, errLockBusy) {
			s.openBusy()
			return s, nil
		}
		if isNoSpace(err) {
			s.opts.ReadOnly = true
			s.warnOnce("no space", fmt.Sprintf("cannot write cache dir %s (%v); using it read-only (kernels it lacks are compiled in memory for this run)", dir, firstLine(err.Error())))
			s.openReadOnly(legacy)
			return s, nil
		}
		s.fallback(fmt.Sprintf("cannot open cache dir %s (%v); using an in-memory cache for this run", dir, err))
		return s, nil
	}
	s.mode = ModeReadWrite
	return s, nil
}

// openReadOnly opens the store for reading without writing anything to the directory: a
// shared lock only if the lock file is there, a legacy store read in place, and a missing,
// damaged or unreadable store read as empty.
func (s *Store) openReadOnly(legacy bool) {
	s.mode = ModeReadOnly
	if legacy {
		if _, err := os.Stat(s.dbDir); err != nil {
			s.dbDir = s.dir
		}
	}
	if lock, err := acquireReadLock(filepath.Join(s.dir, lockFileName), s.opts.LockWait); err == nil {
		s.lock = lock
	} else if errors.Is(err, errLockBusy) {
		s.unread = errors.New("it is being written by another widejit process")
		s.warnOnce("busy", fmt.Sprintf("cache dir %s is being written by another widejit process; using an in-memory cache for this run", s.dir))
		return
	}
	if err := s.openReadOnlyLocked(); err != nil {
		s.lock.release()
		s.lock = nil
		if !errors.Is(err, errNoStoreYet) {
			s.unread = err
		}
		s.warnOnce("unreadable", fmt.Sprintf("cannot read cache dir %s (%v); using an in-memory cache for this run", s.dir, err))
	}
}

// errNoStoreYet: a read-only open of a directory no writer has created a store in.
var errNoStoreYet = errors.New("no cache there yet")

// ReadError says why a read-only store reads nothing from its directory (another process is
// writing it, it is unreadable or damaged); nil when it reads the directory, or when the
// directory holds no store yet.
func (s *Store) ReadError() error { return s.unread }

// openBusy handles a directory another process holds: read through a shared read-only view if
// the holders only read, else memory only.
func (s *Store) openBusy() {
	if !s.opts.ReadOnly {
		if lock, err := acquireLock(filepath.Join(s.dir, lockFileName), false, 0); err == nil {
			s.lock = lock
			if s.openReadOnlyLocked() == nil {
				s.mode = ModeFallback
				s.warnOnce("busy", fmt.Sprintf("cache dir %s is in use by another widejit process; reading it, keeping new entries in memory until exit", s.dir))
				return
			}
			s.lock.release()
			s.lock = nil
		}
	}
	s.fallback(fmt.Sprintf("cache dir %s is in use by another widejit process; using an in-memory cache for this run", s.dir))
}

func (s *Store) fallback(msg string) {
	s.mode = ModeFallback
	s.warnOnce("fallback", msg)
}

// openWritableLocked validates the directory, moves it aside when damaged, and opens Badger.
func (s *Store) openWritableLocked() error {
	if err := adoptDir(s.dir); err != nil {
		return err
	}
	damage := checkSidecar(s.dbDir)
	if errors.Is(damage, errNoSidecar) {
		damage = checkStructure(s.dbDir, true)
	}
	if damage == nil {
		// Badger will change the files; a crash from here on must not leave a stale sidecar.
		if err := os.Remove(filepath.Join(s.dbDir, sidecarName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		db, err := s.openBadgerQuietly(false)
		if err == nil {
			s.db = db
			return nil
		}
		if isBadgerLockError(err) {
			return errLockBusy
		}
		if isNoSpace(err) {
			return err // a full disk, not damage: nothing is moved aside
		}
		damage = err
	}
	aside, err := moveAside(s.dir)
	if err != nil {
		return fmt.Errorf("damaged (%v), and moving it aside failed: %w", damage, err)
	}
	s.damaged = aside
	s.warnOnce("damaged", fmt.Sprintf("cache dir %s was damaged (%v); moved its store to %s and started a fresh cache", s.dir, firstLine(damage.Error()), aside))
	db, err := s.openBadgerQuietly(false)
	if err != nil {
		return err
	}
	s.db = db
	return nil
}

func (s *Store) openBadgerQuietly(readOnly bool) (*badger.DB, error) {
	s.badgerQuiet.Store(true)
	defer s.badgerQuiet.Store(false)
	return openBadger(s.dbDir, readOnly, s.opts, s.badgerLogger())
}

// openReadOnlyLocked opens Badger read-only after the same validation; damage cannot be
// repaired under a shared lock, so it is an error (the caller falls back to memory).
func (s *Store) openReadOnlyLocked() error {
	damage := checkSidecar(s.dbDir)
	if errors.Is(damage, errNoSidecar) {
		if _, err := os.Stat(filepath.Join(s.dbDir, "MANIFEST")); errors.Is(err, os.ErrNotExist) {
			return errNoStoreYet
		}
		damage = checkStructure(s.dbDir, false)
	}
	if errors.Is(damage, errInterrupted) {
		return damage
	}
	if damage != nil {
		return fmt.Errorf("damaged: %v", firstLine(damage.Error()))
	}
	db, err := s.openBadgerQuietly(true)
	if err != nil {
		return err
	}
	s.db, s.dbRO = db, true
	return nil
}

// openBadger opens the database with small sizes, checksum verification and few goroutines;
// a synchronous panic inside badger.Open becomes an error.
func openBadger(dir string, readOnly bool, o Options, logger badger.Logger) (db *badger.DB, err error) {
	memTable := int64(8 << 20)
	if o.memTableSize > 0 {
		memTable = o.memTableSize
	}
	threshold := int64(64 << 10)
	if o.valueThreshold > 0 {
		threshold = o.valueThreshold
	}
	bo := badger.DefaultOptions(dir).
		WithReadOnly(readOnly).
		WithLogger(logger).
		WithMemTableSize(memTable).
		WithBaseTableSize(2 << 20).
		WithValueLogFileSize(16 << 20).
		WithValueThreshold(threshold).
		WithNumMemtables(2).
		WithNumLevelZeroTables(4).
		WithNumLevelZeroTablesStall(8).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithCompression(tableCompression).
		WithBlockSize(tableBlockSize).
		WithBlockCacheSize(4 << 20).
		WithIndexCacheSize(0).
		WithChecksumVerificationMode(options.OnTableAndBlockRead).
		WithVerifyValueChecksum(true).
		WithDetectConflicts(false).
		WithMetricsEnabled(false)
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("badger panicked while opening: %v", firstLine(fmt.Sprint(r)))
		}
	}()
	return badger.Open(bo)
}

func isBadgerLockError(err error) bool {
	return strings.Contains(err.Error(), "Cannot acquire directory lock")
}

// badgerLogger routes Badger's errors and warnings to Warn and drops its chatter.
func (s *Store) badgerLogger() badger.Logger { return badgerLog{s} }

type badgerLog struct{ s *Store }

// maxBadgerMessages caps the Badger messages forwarded per store: a damaged value log makes
// Badger log once per failed read, and each of those is already reported as a bad record.
const maxBadgerMessages = 3

func (l badgerLog) forward(f string, a ...any) {
	if l.s.badgerQuiet.Load() {
		return
	}
	switch n := l.s.badgerLogs.Add(1); {
	case n <= maxBadgerMessages:
		l.s.warn("badger: " + firstLine(fmt.Sprintf(f, a...)))
	case n == maxBadgerMessages+1:
		l.s.warn("badger: further messages suppressed")
	}
}

func (l badgerLog) Errorf(f string, a ...any)   { l.forward(f, a...) }
func (l badgerLog) Warningf(f string, a ...any) { l.forward(f, a...) }
func (badgerLog) Infof(string, ...any)          {}
func (badgerLog) Debugf(string, ...any)         {}

func (s *Store) warn(msg string) {
	if s.opts.Warn != nil {
		s.opts.Warn(msg)
		return
	}
	fmt.Fprintf(os.Stderr, "widejit: warning: %s\n", msg)
}

func (s *Store) warnOnce(topic, msg string) {
	s.mu.Lock()
	seen := s.warned[topic]
	s.warned[topic] = true
	s.mu.Unlock()
	if !seen {
		s.warn(msg)
	}
}

// Dir is the cache directory ("" for memory and off stores).
func (s *Store) Dir() string { return s.dir }

// Mode says how the store is backed.
func (s *Store) Mode() Mode { return s.mode }

// MovedAside is where Open moved a damaged directory's contents, or "".
func (s *Store) MovedAside() string { return s.damaged }

// writable: the store may write its directory (not read-only, and its filesystem not full).
func (s *Store) writable() bool { return s.db != nil && !s.dbRO && !s.noSpace.Load() }

// Get returns the record stored under key. Any problem (absent, unreadable, corrupt) is a miss;
// a corrupt record is deleted and reported through Warn.
func (s *Store) Get(key Key) (*Record, bool) {
	start := time.Now()
	rec, ok := s.get(key)
	s.loadNanos.Add(int64(time.Since(start)))
	if ok {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return rec, ok
}

func (s *Store) get(key Key) (*Record, bool) {
	if s.mode == ModeOff || !key.Kind.valid() {
		return nil, false
	}
	dk := key.dbKey()
	s.mu.Lock()
	v, inMem := s.mem[string(dk)]
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, false
	}
	if !inMem && s.db != nil {
		err := s.db.View(func(txn *badger.Txn) error {
			item, err := txn.Get(dk)
			if err != nil {
				return err
			}
			v, err = item.ValueCopy(nil)
			return err
		})
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil, false
		}
		if err != nil {
			s.dropBad(dk, key.String(), err)
			return nil, false
		}
	} else if !inMem {
		return nil, false
	}
	rec, err := decodeRecord(dk, v)
	if err != nil {
		s.dropBad(dk, key.String(), err)
		return nil, false
	}
	if rec.Kind != key.Kind {
		s.dropBad(dk, key.String(), fmt.Errorf("%w: kind %q under a %q key", errCorrupt, rec.Kind, key.Kind))
		return nil, false
	}
	return rec, true
}

// dropBad deletes an unreadable record (when the store can write) and warns.
func (s *Store) dropBad(dk []byte, name string, why error) {
	s.corrupt.Add(1)
	s.mu.Lock()
	delete(s.mem, string(dk))
	s.mu.Unlock()
	action := "ignored it"
	if s.writable() {
		err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(dk) })
		if err == nil {
			action = "removed it"
		} else {
			action = fmt.Sprintf("could not remove it: %v", err)
		}
	}
	s.warnOnce("bad record", fmt.Sprintf("cache record %s is unreadable (%v); %s, it will be recompiled", name, firstLine(why.Error()), action))
}

// Put stores rec under key (rec.Kind is set from the key, rec.Created when zero). A store
// that may not write (read-only, busy, its filesystem full) keeps it in memory for the process.
func (s *Store) Put(key Key, rec *Record) error {
	if !key.Kind.valid() {
		return fmt.Errorf("cache: invalid key kind %q", key.Kind)
	}
	if rec == nil {
		return errors.New("cache: nil record")
	}
	r := *rec
	r.Kind = key.Kind
	if r.Created.IsZero() {
		r.Created = time.Now().UTC()
	}
	if s.mode == ModeOff {
		return nil
	}

	dk := key.dbKey()
	enc := encodeRecord(dk, &r)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("cache: store is closed")
	}
	if !s.writable() {
		s.mem[string(dk)] = enc
		s.mu.Unlock()
		s.puts.Add(1)
		return nil
	}
	s.mu.Unlock()
	if !s.lowOnSpace(s.dbDir, int64(len(enc))) {
		err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(dk, enc) })
		switch {
		case err == nil:
			s.puts.Add(1)
			return nil
		case !isNoSpace(err):
			return fmt.Errorf("cache: storing %s: %w", key, err)
		}
		s.noSpace.Store(true)
		s.warnOnce("no space", fmt.Sprintf("cannot write cache dir %s (%v); new kernels are kept in memory for the rest of this run", s.dir, firstLine(err.Error())))
	}
	s.mu.Lock()
	s.mem[string(dk)] = enc
	s.mu.Unlock()
	s.puts.Add(1)
	return nil
}

// OutOfSpace reports whether the store stopped writing (or never started) because its
// filesystem had less than MinFreeBytes free.
func (s *Store) OutOfSpace() bool { return s.noSpace.Load() }

// freeSpace measures the free space of a directory's filesystem (a variable for tests).
var freeSpace = freeBytes

// lowOnSpace reports whether writing size more bytes under dir would leave less than
// MinFreeBytes free (once it has, it keeps saying so, and warns once).
func (s *Store) lowOnSpace(dir string, size int64) bool {
	if s.noSpace.Load() {
		return true
	}
	free, err := freeSpace(dir)
	if err != nil || free >= uint64(MinFreeBytes+size) {
		return false
	}
	s.noSpace.Store(true)
	s.warnOnce("no space", fmt.Sprintf("cache dir %s: its filesystem has %s free, under the %d MiB widejit keeps free so that writing the cache cannot crash; "+
		"not writing the cache for this run (kernels it lacks are compiled in memory)", dir, byteText(free), MinFreeBytes>>20))
	return true
}

func byteText(n uint64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// PutDecision stores an autotuning decision (the caller's JSON) under a KindDecision key.
func (s *Store) PutDecision(key Key, name string, decisionJSON []byte) error {
	if key.Kind != KindDecision {
		return fmt.Errorf("cache: PutDecision needs a %q key, got %q", KindDecision, key.Kind)
	}
	return s.Put(key, &Record{Name: name, Payload: decisionJSON})
}

// GetDecision returns the decision JSON stored under a KindDecision key. It does not count
// in Hits/Misses, which report kernel artifacts (`run --json`'s cache object).
func (s *Store) GetDecision(key Key) ([]byte, bool) {
	if key.Kind != KindDecision {
		return nil, false
	}
	rec, ok := s.get(key)
	if !ok {
		return nil, false
	}
	return rec.Payload, true
}

// RecordCompile adds the time the caller spent compiling after a miss.
func (s *Store) RecordCompile(d time.Duration) { s.compileNanos.Add(int64(d)) }

// Counters are what this Store has done since Open.
type Counters struct {
	Hits, Misses int64 // Get results
	Corrupt      int64 // records found unreadable (each also counts as a miss)
	Puts         int64
	Pending      int64         // records held in memory that belong in the directory
	LoadTime     time.Duration // total time in Get
	CompileTime  time.Duration // sum of RecordCompile
}

// Counters returns the counters.
func (s *Store) Counters() Counters {
	c := Counters{
		Hits: s.hits.Load(), Misses: s.misses.Load(), Corrupt: s.corrupt.Load(), Puts: s.puts.Load(),
		LoadTime: time.Duration(s.loadNanos.Load()), CompileTime: time.Duration(s.compileNanos.Load()),
	}
	if s.mode == ModeFallback {
		s.mu.Lock()
		c.Pending = int64(len(s.mem))
		s.mu.Unlock()
	}
	return c
}

// RunReport is the "cache" object of `widejit run --json`.
type RunReport struct {
	Hits      int64   `json:"hits"`
	Misses    int64   `json:"misses"`
	CompileMS float64 `json:"compile_ms"`
	LoadMS    float64 `json:"load_ms"`
}

// RunReport summarizes the counters for `run --json`.
func (s *Store) RunReport() RunReport {
	c := s.Counters()
	return RunReport{Hits: c.Hits, Misses: c.Misses,
		CompileMS: float64(c.CompileTime) / 1e6, LoadMS: float64(c.LoadTime) / 1e6}
}

// Close releases the directory. A writable store records its files' checksums for the next
// Open; a fallback store first writes its pending records back, waiting up to LockWait for the
// directory, and warns about any it could not write.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	pending := s.mem
	s.mem = map[string][]byte{}
	s.mu.Unlock()
	if n := s.corrupt.Load(); n > 1 {
		s.warn(fmt.Sprintf("%d unreadable cache records in all were skipped this run (see `widejit cache verify`)", n))
	}
	var err error
	if s.db != nil {
		err = s.db.Close()
		if err == nil && !s.dbRO {
			err = writeSidecar(s.dbDir)
		}
		s.db = nil
	}
	s.lock.release()
	s.lock = nil
	if s.mode == ModeFallback && len(pending) > 0 && s.dir != "" {
		if werr := s.writeBack(pending); werr != nil {
			s.warn(fmt.Sprintf("%d cache records from this run were not saved to %s (%v); they will be recompiled next time", len(pending), s.dir, werr))
		}
	}
	return err
}

// writeBack stores the pending records into the directory once it is free.
func (s *Store) writeBack(pending map[string][]byte) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	if s.lowOnSpace(s.dir, 0) {
		return fmt.Errorf("its filesystem has less than %d MiB free", MinFreeBytes>>20)
	}
	lock, err := acquireLock(filepath.Join(s.dir, lockFileName), true, s.opts.LockWait)
	if err != nil {
		return err
	}
	defer lock.release()
	w := &Store{dir: s.dir, dbDir: filepath.Join(s.dir, kernelsName), opts: s.opts, mem: map[string][]byte{}, warned: map[string]bool{}}
	if err := w.openWritableLocked(); err != nil {
		return err
	}
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wb := w.db.NewWriteBatch()
	for _, k := range keys {
		if err := wb.Set([]byte(k), pending[k]); err != nil {
			wb.Cancel()
			w.db.Close()
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		w.db.Close()
		return err
	}
	if err := w.db.Close(); err != nil {
		return err
	}
	return writeSidecar(w.dbDir)
}
