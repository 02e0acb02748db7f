// Package cache is widejit's persistent store of compiled kernel artifacts and autotuning
// decisions, kept in a Badger database (github.com/dgraph-io/badger/v4) under
// $XDG_CACHE_HOME/widejit (DefaultDir). It knows nothing of kernels beyond keys and bytes and
// imports nothing from the rest of widejit.
//
// # Using it from the compiler (a few lines)
//
//	store, err := cache.Open(dir, cache.Options{Warn: warnf}) // busy, damaged or unusable dirs fall back
//	if err != nil { ... }                                     // invalid Options, or a foreign dir
//	defer store.Close()                                       // Close as soon as compiling is done
//
//	key, err := cache.NewKey(cache.KindKernel).
//		String("kernel_text", text).String("fn", name).Strings("signature", sig).
//		Ints("constexprs", cx).Int("num_warps", 4).String("backend", "ptx").
//		String("target", "sm_90").String("ptx_isa", "7.8").
//		String("compiler_version", version).Int("codegen_format", 1).
//		String("config.fast_math", "false").Key()
//	if rec, ok := store.Get(key); ok { use(rec.Payload, rec.Meta) } else {
//		t0 := time.Now(); art := compile(...); store.RecordCompile(time.Since(t0))
//		store.Put(key, &cache.Record{Name: name, Backend: "ptx", Target: "sm_90",
//			Meta: map[string]string{"shared_bytes": "4096"}, Payload: art})
//	}
//	report := store.RunReport() // {hits, misses, compile_ms, load_ms} for `run --json`
//
// Tuning decisions use the same store: NewKey(KindDecision)... with PutDecision/GetDecision
// (the payload is the caller's JSON). cache.Off() is a store that stores nothing but still
// counts misses and compile time (for --no-cache).
//
// # Keys
//
// A Key is a SHA-256 over a canonical encoding of the kind and of named, typed fields: fields
// are sorted by name, every name and value is length-prefixed and carries a type tag, so field
// order never matters and two different field sets never encode alike. Duplicate or empty field
// names make KeyBuilder.Key fail. The database key is "<kind>/" + the 32 hash bytes: "k/"
// kernel artifacts, "d/" tuning decisions.
//
// # Records
//
// A value is a versioned binary record (magic, format number, kind, name, backend, target,
// created time, sorted metadata, payload) followed by a SHA-256 of the database key and every
// byte before it. The checksum is verified on every read; a record that fails it (or fails to
// decode) is deleted, reported through Options.Warn and returned as a miss, so the caller
// recompiles. Wrong bytes are never served, whatever Badger returns.
//
// # The directory
//
// The cache directory may hold other files: widejit owns only widejit-cache.tag (the marker,
// and its .tmp while it is written), widejit.lock, kernels/ (the Badger store),
// kernels.damaged-*/ and wasm/ (the plugins' compilation cache, WasmDir), and never touches
// anything else (layout.go). Open adopts an empty directory or one of the old layout
// (Badger's files at the top, moved into kernels/ on the first writable open) and refuses any
// other non-empty one with a *ForeignDirError.
//
// A directory that is not writable (a shared, pre-populated cache on a cluster; detected with
// access(2), so a read-only mount counts even for root), or Options.ReadOnly, opens read-only:
// hits are read, Put keeps records in memory for the process, nothing is written (no lock
// file is created; a shared lock is taken only if one exists; a missing directory is not
// created). ReadError says why such a store reads nothing (a writer holds the directory, or it
// is damaged or unreadable).
//
// # Several processes on one directory
//
// Badger allows one writer per directory. A writable Open takes an exclusive flock on <dir>/widejit.lock
// (Badger's own LOCK is a second guard), retrying for Options.LockWait (default 5 s). If the
// directory is still busy it tries a shared lock and a read-only Badger open (works when the
// other holders only read), else it runs from memory; either way it warns once ("cache dir X is
// in use by another widejit process; using an in-memory cache for this run"). Records put while
// in such a fallback are kept in memory, counted as pending in Stats, and written back by Close,
// which waits up to LockWait once more for the directory; whatever still cannot be written is
// reported through Warn. No process fails, none corrupts the store. Close the Store as soon as
// the plan is compiled so that other processes get the directory quickly.
//
// # A full disk
//
// Badger writes its value log, memtables and tables through memory maps of sparse files,
// where a full filesystem is not an error but a SIGBUS that kills the process. So a store
// keeps MinFreeBytes free: Open measures the free space (statfs) and, below it, opens the
// directory read-only (hits are read, new records kept in memory for the process); Put
// measures it again before every write and, below it, stops writing for the rest of the run
// (OutOfSpace). Both warn once. A write error of a full or read-only filesystem while opening
// (Badger's pid file, the marker) is the same case, never damage. GC refuses to run on a full
// filesystem; Clear empties the store there by deleting its files under the exclusive lock,
// which frees the space. Another program filling the disk faster than the margin while a
// store writes can still defeat this.
//
// # Damage
//
// On every clean Close of a writable store, after Badger has closed, the Store writes
// widejit-files.json: name, size and CRC-32C of every Badger file in the directory. Open
// checks it before Badger sees the files (any truncated, overwritten, missing or extra
// MANIFEST, .sst, .vlog, .mem, KEYREGISTRY or DISCARD file is caught; files Badger does not
// own are ignored) and deletes it while the directory is open for writing. Without it (first
// use, or the last writer crashed) Open checks structure instead: the KEYREGISTRY size; the
// MANIFEST replayed with Badger's reader, which must end on a complete entry (Badger itself
// would drop a partial one) and name only .sst files present; and every table it names
// through Badger's table API (footer, index and block checksums) inside recover(), so the
// panics Badger would raise in its own goroutines on truncated tables happen in ours and are
// caught. Tables the MANIFEST does not name are what a kill in the middle of a flush or
// compaction leaves (their records are still in the memtable log, or in the tables they were
// to replace), and empty .mem and .vlog files what a kill right after creating one leaves
// (Badger refuses to open those): a writable Open deletes both and keeps the store; a
// read-only one may not, and reads nothing from such a store until a writable Open has. Badger then opens with table and value
// checksum verification on; an Open error or synchronous panic also counts as damage. On
// damage the store (kernels/) is renamed to kernels.damaged-<UTC timestamp> inside the
// directory, a fresh store is created, and Open warns once; the newest three damaged copies
// are kept (older ones are pruned) and `cache verify` lists them, with any <dir>.damaged-*
// an older widejit left beside the directory (those are never removed: they may hold a
// user's files).
//
// Not caught at Open: damage done by another program while the store is open, and damage to a
// crashed store's .vlog/.mem beyond what Badger's replay detects; record checksums (and
// Badger's value checksums) still keep such bytes from being served: those records are misses.
//
// Bad records are reported once per store (the first one), with a total at Close; Badger's own
// log lines are forwarded (at most three) only after Open, since an Open failure is reported
// as damage.
package cache
