package cache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// warnings collects Warn lines.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) add(m string) { w.mu.Lock(); w.lines = append(w.lines, m); w.mu.Unlock() }
func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}
func (w *warnings) count(sub string) int {
	n := 0
	for _, l := range w.all() {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

func testKey(t testing.TB, kind Kind, i int) Key {
	k, err := NewKey(kind).String("fn", fmt.Sprintf("kernel_%d", i)).Int("num_warps", 4).Key()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testPayload is deterministic per index, so any process can check any record's bytes.
func testPayload(i, size int) []byte {
	b := make([]byte, size)
	x := uint32(i)*2654435761 + 12345
	for j := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[j] = byte(x)
	}
	return b
}

func openT(t testing.TB, dir string, w *warnings, mod func(*Options)) *Store {
	t.Helper()
	o := Options{Warn: w.add, LockWait: 200 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTripAndPersistence(t *testing.T) {
	dir := t.TempDir()
	w := &warnings{}
	s := openT(t, dir, w, nil)
	if s.Mode() != ModeReadWrite {
		t.Fatalf("mode %s, want read-write", s.Mode())
	}
	k := testKey(t, KindKernel, 1)
	if _, ok := s.Get(k); ok {
		t.Fatal("hit in an empty store")
	}
	rec := &Record{Name: "wide_mlp", Backend: "ptx", Target: "sm_90",
		Meta: map[string]string{"shared_bytes": "4096", "registers": "40"}, Payload: []byte(".version 7.8\n.target sm_90\n")}
	if err := s.Put(k, rec); err != nil {
		t.Fatal(err)
	}
	got, ok := s.Get(k)
	if !ok {
		t.Fatal("miss after Put")
	}
	if got.Name != "wide_mlp" || got.Backend != "ptx" || got.Target != "sm_90" || got.Kind != KindKernel ||
		got.Meta["shared_bytes"] != "4096" || got.Meta["registers"] != "40" || !bytes.Equal(got.Payload, rec.Payload) || got.Created.IsZero() {
		t.Fatalf("got %+v", got)
	}
	if c := s.Counters(); c.Hits != 1 || c.Misses != 1 || c.Puts != 1 {
		t.Fatalf("counters %+v, want 1 hit 1 miss 1 put", c)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(storeDir(dir), sidecarName)); err != nil {
		t.Fatalf("no sidecar after a clean close: %v", err)
	}
	s = openT(t, dir, w, nil)
	defer s.Close()
	got, ok = s.Get(k)
	if !ok || !bytes.Equal(got.Payload, rec.Payload) {
		t.Fatal("record lost across reopen")
	}
	if _, err := os.Stat(filepath.Join(storeDir(dir), sidecarName)); !os.IsNotExist(err) {
		t.Fatalf("sidecar still present while open for writing: %v", err)
	}
	if len(w.all()) != 0 {
		t.Fatalf("unexpected warnings: %q", w.all())
	}
}

func TestDecisions(t *testing.T) {
	s := openT(t, t.TempDir(), &warnings{}, nil)
	defer s.Close()
	dk := testKey(t, KindDecision, 7)
	kk := testKey(t, KindKernel, 7)
	if err := s.PutDecision(kk, "x", []byte("{}")); err == nil {
		t.Error("PutDecision accepted a kernel key")
	}
	js := []byte(`{"strategy":"row_block","block":128}`)
	if err := s.PutDecision(dk, "wide_mlp", js); err != nil {
		t.Fatal(err)
	}
	got, ok := s.GetDecision(dk)
	if !ok || !bytes.Equal(got, js) {
		t.Fatalf("GetDecision = %q, %v", got, ok)
	}
	if _, ok := s.Get(kk); ok {
		t.Fatal("the kernel key with the same fields hit the decision")
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 1 || len(st.Groups) != 1 || st.Groups[0].Kind != "decision" {
		t.Fatalf("stats %+v", st)
	}
}

// A record whose stored bytes no longer match their checksum is a miss, is removed, and warns.
func TestCorruptRecordIsMissWarnAndRemoved(t *testing.T) {
	for _, how := range []string{"flip payload byte", "truncate", "wrong key", "garbage"} {
		t.Run(how, func(t *testing.T) {
			w := &warnings{}
			s := openT(t, t.TempDir(), w, nil)
			defer s.Close()
			k := testKey(t, KindKernel, 1)
			other := testKey(t, KindKernel, 2)
			if err := s.Put(k, &Record{Name: "k1", Payload: testPayload(1, 300)}); err != nil {
				t.Fatal(err)
			}
			good := encodeRecord(k.dbKey(), &Record{Kind: KindKernel, Name: "k1", Payload: testPayload(1, 300), Created: time.Unix(1, 0)})
			var bad []byte
			switch how {
			case "flip payload byte":
				bad = bytes.Clone(good)
				bad[len(bad)-40] ^= 1
			case "truncate":
				bad = good[:len(good)-10]
			case "wrong key": // a valid record for another key, served under this one
				bad = encodeRecord(other.dbKey(), &Record{Kind: KindKernel, Name: "k2", Payload: testPayload(2, 300)})
			case "garbage":
				bad = []byte("not a record at all, not even close to one............")
			}
			if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(k.dbKey(), bad) }); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Get(k); ok {
				t.Fatal("a corrupt record was served")
			}
			if w.count("unreadable") != 1 {
				t.Fatalf("warnings %q, want one about the unreadable record", w.all())
			}
			err := s.db.View(func(txn *badger.Txn) error { _, err := txn.Get(k.dbKey()); return err })
			if err != badger.ErrKeyNotFound {
				t.Fatalf("corrupt record still stored (err %v)", err)
			}
			if c := s.Counters(); c.Corrupt != 1 || c.Misses != 1 || c.Hits != 0 {
				t.Fatalf("counters %+v", c)
			}
		})
	}
}

func TestVerifyRemovesBadRecords(t *testing.T) {
	w := &warnings{}
	s := openT(t, t.TempDir(), w, nil)
	defer s.Close()
	for i := 0; i < 10; i++ {
		if err := s.Put(testKey(t, KindKernel, i), &Record{Name: fmt.Sprint(i), Target: "sm_90", Payload: testPayload(i, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	bad := testKey(t, KindKernel, 3).dbKey()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(bad, []byte("junk")) }); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 10 || len(rep.Bad) != 1 || rep.Removed != 1 || rep.Tables != "ok" {
		t.Fatalf("verify report %+v", rep)
	}
	rep, err = s.Verify()
	if err != nil || rep.Checked != 9 || len(rep.Bad) != 0 {
		t.Fatalf("second verify %+v %v", rep, err)
	}
	ents, err := s.List()
	if err != nil || len(ents) != 9 {
		t.Fatalf("list: %d entries, %v", len(ents), err)
	}
	st, _ := s.Stats()
	if st.Records != 9 || st.Groups[0].Target != "sm_90" || st.Groups[0].PayloadBytes != 900 {
		t.Fatalf("stats %+v", st)
	}
	cr, err := s.Clear()
	if err != nil || cr.Removed != 9 {
		t.Fatalf("clear %+v %v", cr, err)
	}
	if ents, _ := s.List(); len(ents) != 0 {
		t.Fatalf("%d entries after clear", len(ents))
	}
}

func TestOffAndMemory(t *testing.T) {
	off := Off()
	k := testKey(t, KindKernel, 1)
	if err := off.Put(k, &Record{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := off.Get(k); ok {
		t.Fatal("Off served a record")
	}
	off.RecordCompile(3 * time.Millisecond)
	if r := off.RunReport(); r.Misses != 1 || r.Hits != 0 || r.CompileMS != 3 {
		t.Fatalf("off report %+v", r)
	}
	m := openT(t, "", &warnings{}, func(o *Options) { o.InMemory = true })
	if err := m.Put(k, &Record{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if r, ok := m.Get(k); !ok || string(r.Payload) != "x" {
		t.Fatal("memory store lost a record")
	}
	m.Close()
}

// A second Open of a held directory falls back (warning once), serves what it put, and writes
// it back at Close once the directory is free.
func TestBusyDirFallsBackAndWritesBack(t *testing.T) {
	dir := t.TempDir()
	w1, w2 := &warnings{}, &warnings{}
	first := openT(t, dir, w1, nil)
	k1, k2 := testKey(t, KindKernel, 1), testKey(t, KindKernel, 2)
	if err := first.Put(k1, &Record{Name: "one", Payload: testPayload(1, 50)}); err != nil {
		t.Fatal(err)
	}
	second := openT(t, dir, w2, func(o *Options) { o.LockWait = 50 * time.Millisecond })
	if second.Mode() != ModeFallback {
		t.Fatalf("mode %s, want fallback", second.Mode())
	}
	if w2.count("in use by another widejit process") != 1 {
		t.Fatalf("warnings %q", w2.all())
	}
	if err := second.Put(k2, &Record{Name: "two", Payload: testPayload(2, 50)}); err != nil {
		t.Fatal(err)
	}
	if r, ok := second.Get(k2); !ok || !bytes.Equal(r.Payload, testPayload(2, 50)) {
		t.Fatal("fallback store lost its own record")
	}
	if c := second.Counters(); c.Pending != 1 {
		t.Fatalf("pending %d, want 1", c.Pending)
	}
	if st, _ := second.Stats(); st.Pending != 1 {
		t.Fatalf("stats pending %d", st.Pending)
	}
	go func() { time.Sleep(20 * time.Millisecond); first.Close() }()
	second.opts.LockWait = 5 * time.Second
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w2.count("not saved"); n != 0 {
		t.Fatalf("write-back failed: %q", w2.all())
	}
	third := openT(t, dir, &warnings{}, nil)
	defer third.Close()
	for i, k := range []Key{k1, k2} {
		if r, ok := third.Get(k); !ok || !bytes.Equal(r.Payload, testPayload(i+1, 50)) {
			t.Fatalf("record %d missing after write-back", i+1)
		}
	}
}

// When the directory stays busy through Close, the lost writes are reported, not silent.
func TestBusyDirLostWritesAreReported(t *testing.T) {
	dir := t.TempDir()
	first := openT(t, dir, &warnings{}, nil)
	defer first.Close()
	w := &warnings{}
	second := openT(t, dir, w, func(o *Options) { o.LockWait = 20 * time.Millisecond })
	if err := second.Put(testKey(t, KindKernel, 1), &Record{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	second.Close()
	if w.count("1 cache records from this run were not saved") != 1 {
		t.Fatalf("warnings %q", w.all())
	}
}

// Readers share a directory: a read-only store and a busy-fallback store read through it.
func TestReadOnlySharing(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, &warnings{}, nil)
	k := testKey(t, KindKernel, 1)
	if err := s.Put(k, &Record{Payload: testPayload(1, 64)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r1 := openT(t, dir, &warnings{}, func(o *Options) { o.ReadOnly = true })
	defer r1.Close()
	if r1.Mode() != ModeReadOnly {
		t.Fatalf("mode %s", r1.Mode())
	}
	// A read-only store keeps what is put in memory for the process, never in the directory.
	k2 := testKey(t, KindKernel, 2)
	if err := r1.Put(k2, &Record{Payload: []byte("mem")}); err != nil {
		t.Fatalf("Put on a read-only store: %v", err)
	}
	if r, ok := r1.Get(k2); !ok || string(r.Payload) != "mem" {
		t.Fatal("a record put in a read-only store was not kept in memory")
	}
	w := &warnings{}
	r2 := openT(t, dir, w, func(o *Options) { o.LockWait = 20 * time.Millisecond })
	defer r2.Close()
	if r2.Mode() != ModeFallback {
		t.Fatalf("mode %s, want fallback", r2.Mode())
	}
	for _, st := range []*Store{r1, r2} {
		if r, ok := st.Get(k); !ok || !bytes.Equal(r.Payload, testPayload(1, 64)) {
			t.Fatalf("%s store did not read through", st.Mode())
		}
	}
}

// A path that cannot be a directory gives a working in-memory store and one warning.
func TestUnusableDirFallsBack(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	s := openT(t, filepath.Join(file, "cache"), w, nil)
	if s.Mode() != ModeFallback || w.count("cannot use cache dir") != 1 {
		t.Fatalf("mode %s, warnings %q", s.Mode(), w.all())
	}
	k := testKey(t, KindKernel, 1)
	if err := s.Put(k, &Record{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Get(k); !ok || string(r.Payload) != "x" {
		t.Fatal("fallback store lost a record")
	}
	s.Close()
	if w.count("were not saved") != 1 {
		t.Fatalf("lost writes not reported: %q", w.all())
	}
}

// Many goroutines share one Store.
func TestConcurrentGoroutines(t *testing.T) {
	s := openT(t, t.TempDir(), &warnings{}, nil)
	defer s.Close()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				k := testKey(t, KindKernel, i)
				if r, ok := s.Get(k); ok {
					if !bytes.Equal(r.Payload, testPayload(i, 256)) {
						t.Errorf("record %d has wrong bytes", i)
					}
					continue
				}
				if err := s.Put(k, &Record{Payload: testPayload(i, 256)}); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	if c := s.Counters(); c.Hits+c.Misses != 400 || c.Misses < 50 {
		t.Fatalf("counters %+v", c)
	}
}
