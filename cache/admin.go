package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Entry describes one stored record (for `widejit cache ls`).
type Entry struct {
	Key     string            `json:"key"`
	Kind    string            `json:"kind"`
	Name    string            `json:"name"`
	Backend string            `json:"backend"`
	Target  string            `json:"target"`
	Size    int               `json:"size"` // payload bytes
	Created time.Time         `json:"created"`
	Meta    map[string]string `json:"meta,omitempty"`
}

// BadRecord is a record that failed verification.
type BadRecord struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// walk visits every record (directory view and pending memory records, memory first), decoding
// and verifying each; bad ones go to bad (and are deleted when the store can write).
func (s *Store) walk(visit func(key Key, rec *Record, stored int)) (bad []BadRecord, err error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("cache: store is closed")
	}
	mem := make(map[string][]byte, len(s.mem))
	for k, v := range s.mem {
		mem[k] = v
	}
	s.mu.Unlock()
	check := func(dk, v []byte) {
		key, ok := keyFromDB(dk)
		if !ok {
			bad = append(bad, BadRecord{Key: fmt.Sprintf("%q", dk), Reason: "not a widejit cache key"})
			return
		}
		rec, err := decodeRecord(dk, v)
		if err == nil && rec.Kind != key.Kind {
			err = fmt.Errorf("%w: kind %q under a %q key", errCorrupt, rec.Kind, key.Kind)
		}
		if err != nil {
			bad = append(bad, BadRecord{Key: key.String(), Reason: firstLine(err.Error())})
			return
		}
		visit(key, rec, len(v))
	}
	keys := make([]string, 0, len(mem))
	for k := range mem {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		check([]byte(k), mem[k])
	}
	var badKeys [][]byte
	if s.db != nil {
		err = s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.DefaultIteratorOptions)
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				item := it.Item()
				dk := item.KeyCopy(nil)
				if _, shadowed := mem[string(dk)]; shadowed {
					continue
				}
				v, verr := item.ValueCopy(nil)
				if verr != nil {
					k, _ := keyFromDB(dk)
					bad = append(bad, BadRecord{Key: k.String(), Reason: firstLine(verr.Error())})
					badKeys = append(badKeys, dk)
					continue
				}
				n := len(bad)
				check(dk, v)
				if len(bad) > n {
					badKeys = append(badKeys, dk)
				}
			}
			return nil
		})
	}
	if len(bad) > 0 {
		s.corrupt.Add(int64(len(bad)))
	}
	if len(badKeys) > 0 && s.writable() {
		derr := s.db.Update(func(txn *badger.Txn) error {
			for _, k := range badKeys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			err = derr
		}
	}
	if len(bad) > 0 {
		s.warnOnce("bad record", fmt.Sprintf("cache record %s is unreadable (%s); it will be recompiled", bad[0].Key, bad[0].Reason))
	}
	return bad, err
}

// List returns every readable record, sorted by kind, name, target and key.
func (s *Store) List() ([]Entry, error) {
	var out []Entry
	_, err := s.walk(func(key Key, rec *Record, _ int) {
		out = append(out, Entry{Key: key.String(), Kind: key.Kind.Label(), Name: rec.Name,
			Backend: rec.Backend, Target: rec.Target, Size: len(rec.Payload), Created: rec.Created, Meta: rec.Meta})
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return a.Key < b.Key
	})
	return out, err
}

// Group counts records of one kind and target.
type Group struct {
	Kind         string `json:"kind"`
	Target       string `json:"target"`
	Count        int    `json:"count"`
	PayloadBytes int64  `json:"payload_bytes"`
	StoredBytes  int64  `json:"stored_bytes"` // encoded record bytes
}

// Stats describes the store's contents.
type Stats struct {
	Dir        string  `json:"dir"`
	Mode       Mode    `json:"mode"`
	Records    int     `json:"records"`
	Groups     []Group `json:"groups"`
	Bad        int     `json:"bad_records"`
	Pending    int64   `json:"pending"` // records in memory that belong in the directory
	DiskBytes  int64   `json:"disk_bytes"`
	LSMBytes   int64   `json:"lsm_bytes"`
	VLogBytes  int64   `json:"vlog_bytes"`
	MovedAside string  `json:"moved_aside,omitempty"`
	WasmBytes  int64   `json:"wasm_bytes"` // the plugins' compilation cache
}

// Stats counts records and sizes by kind and target.
func (s *Store) Stats() (Stats, error) {
	st := Stats{Dir: s.dir, Mode: s.mode, MovedAside: s.damaged}
	groups := map[[2]string]*Group{}
	bad, err := s.walk(func(key Key, rec *Record, stored int) {
		gk := [2]string{key.Kind.Label(), rec.Target}
		g := groups[gk]
		if g == nil {
			g = &Group{Kind: gk[0], Target: gk[1]}
			groups[gk] = g
		}
		g.Count++
		g.PayloadBytes += int64(len(rec.Payload))
		g.StoredBytes += int64(stored)
		st.Records++
	})
	st.Bad = len(bad)
	st.Groups = []Group{}
	for _, g := range groups {
		st.Groups = append(st.Groups, *g)
	}
	sort.Slice(st.Groups, func(i, j int) bool {
		if st.Groups[i].Kind != st.Groups[j].Kind {
			return st.Groups[i].Kind < st.Groups[j].Kind
		}
		return st.Groups[i].Target < st.Groups[j].Target
	})
	c := s.Counters()
	st.Pending = c.Pending
	if s.db != nil {
		st.LSMBytes, st.VLogBytes = s.db.Size()
	}
	st.DiskBytes = dirBytes(s.dbDir)
	if s.dir != "" {
		st.WasmBytes = checkWasm(WasmDir(s.dir), false).Bytes
	}
	return st, err
}

func dirBytes(dir string) int64 {
	if dir == "" {
		return 0
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += allocatedBytes(info)
		}
	}
	return n
}

// VerifyReport is the result of Verify.
type VerifyReport struct {
	Checked int         `json:"checked"`
	Bad     []BadRecord `json:"bad"`
	Removed int         `json:"removed"`
	Tables  string      `json:"tables"` // "ok" or Badger's table checksum error
	// Damaged lists the damaged stores set aside in the directory (newest first, the newest
	// few kept); DamagedBeside those an older widejit left beside it (<dir>.damaged-*),
	// which are never removed automatically.
	Damaged       []string   `json:"damaged_copies"`
	DamagedBeside []string   `json:"damaged_copies_beside,omitempty"`
	Wasm          WasmReport `json:"wasm"`
}

// Verify checks every record's checksum (removing bad ones when writable) and every table's
// block checksums.
func (s *Store) Verify() (VerifyReport, error) {
	rep := VerifyReport{Bad: []BadRecord{}, Tables: "ok"}
	if s.db != nil {
		if err := s.db.VerifyChecksum(); err != nil {
			rep.Tables = firstLine(err.Error())
		}
	}
	bad, err := s.walk(func(Key, *Record, int) { rep.Checked++ })
	rep.Checked += len(bad)
	if bad != nil {
		rep.Bad = bad
	}
	if s.writable() {
		rep.Removed = len(bad)
	}
	rep.Damaged, rep.DamagedBeside = []string{}, nil
	if s.dir != "" {
		inside, beside := DamagedCopies(s.dir)
		rep.Damaged = append(rep.Damaged, inside...)
		rep.DamagedBeside = beside
		rep.Wasm = checkWasm(WasmDir(s.dir), s.writable())
	}
	return rep, err
}

// GCReport is the result of GC.
type GCReport struct {
	Rounds      int   `json:"rounds"` // value-log files rewritten
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
	// PrunedDamaged lists the damaged copies removed (all but the newest few); Wasm the
	// compilation cache's check (bad entries and stale temporary files removed).
	PrunedDamaged []string   `json:"pruned_damaged,omitempty"`
	Wasm          WasmReport `json:"wasm"`
}

// GC flattens the tree and rewrites value-log files that are mostly garbage.
func (s *Store) GC() (GCReport, error) {
	var rep GCReport
	if s.OutOfSpace() {
		return rep, fmt.Errorf("cache dir %s: its filesystem is full; free some space first (`widejit cache clear` can)", s.dir)
	}
	if !s.writable() {
		return rep, fmt.Errorf("cache dir %s is not open for writing (mode %s)", s.dir, s.mode)
	}
	rep.BytesBefore = dirBytes(s.dbDir)
	pruned, err := pruneDamaged(s.dir, keepDamaged)
	rep.PrunedDamaged = pruned
	if err != nil {
		return rep, err
	}
	rep.Wasm = checkWasm(WasmDir(s.dir), true)
	if err := s.db.Flatten(1); err != nil {
		return rep, err
	}
	for {
		err := s.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) {
			break
		}
		if err != nil {
			return rep, err
		}
		rep.Rounds++
	}
	rep.BytesAfter = dirBytes(s.dbDir)
	return rep, nil
}

// ClearReport says what Clear removed.
type ClearReport struct {
	Removed     int     `json:"removed"`
	Groups      []Group `json:"groups"`
	WasmRemoved int     `json:"wasm_removed"` // entries of the plugins' compilation cache
}

// Clear removes every record. A store whose filesystem is too full to open it for writing
// (OutOfSpace) is cleared by deleting its files under the directory's exclusive lock, which is
// what frees the space (Badger itself would need some to drop them).
func (s *Store) Clear() (ClearReport, error) {
	if s.OutOfSpace() && s.mode == ModeReadOnly && s.dir != "" {
		return s.clearFiles()
	}
	if !s.writable() && s.mode != ModeMemory {
		return ClearReport{}, fmt.Errorf("cache dir %s is not open for writing (mode %s)", s.dir, s.mode)
	}
	rep, err := s.forgetAll()
	if err != nil {
		return rep, err
	}
	if s.dir != "" && s.writable() {
		if rep.WasmRemoved, err = clearWasm(WasmDir(s.dir)); err != nil {
			return rep, err
		}
	}
	if s.db != nil {
		return rep, s.db.DropAll()
	}
	return rep, nil
}

// forgetAll counts what a clear removes (the report's records and groups) and drops the
// records held in memory.
func (s *Store) forgetAll() (ClearReport, error) {
	var rep ClearReport
	st, err := s.Stats()
	if err != nil {
		return rep, err
	}
	rep.Removed, rep.Groups = st.Records+st.Bad, st.Groups
	s.mu.Lock()
	s.mem = map[string][]byte{}
	s.mu.Unlock()
	return rep, nil
}

// clearFiles empties a read-only store by deleting its files: it counts the records, closes
// its read-only view, waits for the exclusive lock and removes the store's files (Badger's,
// and the file list), and the plugins' compilation cache. Nothing else in the directory is
// touched.
func (s *Store) clearFiles() (ClearReport, error) {
	rep, err := s.forgetAll()
	if err != nil {
		return rep, err
	}
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			return rep, err
		}
		s.db = nil
	}
	s.lock.release()
	s.lock = nil
	lock, err := acquireLock(filepath.Join(s.dir, lockFileName), true, s.opts.LockWait)
	if err != nil {
		return rep, fmt.Errorf("cache dir %s: %w", s.dir, err)
	}
	defer lock.release()
	files, err := storeFiles(s.dbDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, err
	}
	for _, e := range files {
		if err := os.Remove(filepath.Join(s.dbDir, e.Name())); err != nil {
			return rep, err
		}
	}
	for _, name := range []string{sidecarName, "LOCK"} {
		if err := os.Remove(filepath.Join(s.dbDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, err
		}
	}
	rep.WasmRemoved, err = clearWasm(WasmDir(s.dir))
	return rep, err
}
