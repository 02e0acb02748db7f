package cache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// snapshot records every file under dir (path, mode, SHA-256 of the contents).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		sum := ""
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		}
		out[rel] = fmt.Sprintf("%v %s", info.Mode(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeUserFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{
		"notes.txt":         "my notes\n",
		"data/weights.bin":  strings.Repeat("\x00\x01", 1000),
		"MANIFEST.md":       "not Badger's",
		"kernels-mine/a.py": "print(1)\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	all := snapshot(t, dir)
	mine := map[string]string{}
	for name := range files {
		mine[name] = all[name]
		mine[filepath.Dir(name)] = all[filepath.Dir(name)]
	}
	return mine
}

// userFilesUnchanged asserts the user's files are byte-for-byte (and mode-for-mode) as before.
func userFilesUnchanged(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshot(t, dir)
	for name, want := range before {
		if after[name] != want {
			t.Errorf("user file %s changed: %q -> %q", name, want, after[name])
		}
	}
}

// TestForeignDirIsRefused: a non-empty directory that is not a widejit cache is refused with
// a clear error, and nothing in it is touched (not even a lock file).
func TestForeignDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	before := writeUserFiles(t, dir)
	for _, ro := range []bool{false, true} {
		_, err := Open(dir, Options{Warn: (&warnings{}).add, ReadOnly: ro})
		var fe *ForeignDirError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "is not a widejit cache") || !strings.Contains(err.Error(), "notes.txt") {
			t.Fatalf("read-only %v: got %v, want a refusal naming the dir's files", ro, err)
		}
	}
	if after := snapshot(t, dir); len(after) != len(before) {
		t.Fatalf("entries added to a refused dir: %v", after)
	}
	userFilesUnchanged(t, dir, before)
}

// TestMarkerBeingWrittenIsOurs: a directory that holds only the marker's temporary file is
// one another process is adopting right now (adoptDir writes the file, then renames it): an
// opener reading the directory in between opens the cache instead of refusing it as foreign
// (TestFourProcesses failed on that race), and the marker is then in place.
func TestMarkerBeingWrittenIsOurs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, markerName+".tmp"), []byte(markerText[:10]), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	s, err := Open(dir, Options{Warn: w.add})
	if err != nil {
		t.Fatalf("a dir holding only the marker's temporary file: %v", err)
	}
	s.Close()
	if b, err := os.ReadFile(filepath.Join(dir, markerName)); err != nil || string(b) != markerText {
		t.Fatalf("marker after the open: %q, %v", b, err)
	}
}

// TestDamageTouchesOnlyTheCache: a marked cache dir shared with user files; the store is
// damaged three, four, five times: each time only kernels/ moves aside, the oldest copies are
// pruned (keepDamaged kept), Verify lists them, and the user's files stay byte-for-byte.
func TestDamageTouchesOnlyTheCache(t *testing.T) {
	dir := t.TempDir()
	fillDir(t, dir) // an empty dir is adopted: marker, lock, kernels/
	if _, err := os.Stat(filepath.Join(dir, markerName)); err != nil {
		t.Fatalf("no marker after adopting an empty dir: %v", err)
	}
	before := writeUserFiles(t, dir)
	// A compilation cache entry, and a bad one.
	wasm := filepath.Join(WasmDir(dir), "wazero-test")
	os.MkdirAll(wasm, 0o755)
	os.WriteFile(filepath.Join(wasm, "good"), []byte("WAZEVO...."), 0o644)
	os.WriteFile(filepath.Join(wasm, "bad"), []byte("garbage"), 0o644)
	for round := 1; round <= keepDamaged+2; round++ {
		if err := os.WriteFile(findFile(t, dir, "MANIFEST"), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
		w := &warnings{}
		s := openT(t, dir, w, nil)
		if s.MovedAside() == "" || !strings.HasPrefix(s.MovedAside(), filepath.Join(dir, damagedPrefix)) {
			t.Fatalf("round %d: moved aside to %q (warnings %q)", round, s.MovedAside(), w.all())
		}
		if err := s.Put(testKey(t, KindKernel, round), &Record{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		rep, err := s.Verify()
		if err != nil {
			t.Fatal(err)
		}
		if want := min(round, keepDamaged); len(rep.Damaged) != want || rep.Damaged[0] != s.MovedAside() {
			t.Fatalf("round %d: verify lists %v, want the %d newest, %s first", round, rep.Damaged, want, s.MovedAside())
		}
		if round == 1 && (rep.Wasm.Files != 2 || len(rep.Wasm.Bad) != 1 || rep.Wasm.Removed != 1) {
			t.Fatalf("wasm report %+v, want 2 files, 1 bad removed", rep.Wasm)
		}
		s.Close()
		userFilesUnchanged(t, dir, before)
	}
	if _, err := os.Stat(filepath.Join(wasm, "good")); err != nil {
		t.Fatalf("a good compilation cache entry was removed: %v", err)
	}
	s := openT(t, dir, &warnings{}, nil)
	rep, err := s.Clear()
	if err != nil || rep.WasmRemoved != 1 {
		t.Fatalf("clear: %+v, %v", rep, err)
	}
	s.Close()
	userFilesUnchanged(t, dir, before)
}

// TestLegacyLayoutIsAdopted: a cache of the old layout (Badger's files in the dir itself,
// next to user files) is read in place read-only, and moved into kernels/ on the first
// writable open with its records intact; user files are untouched.
func TestLegacyLayoutIsAdopted(t *testing.T) {
	tmpl := t.TempDir()
	fillDir(t, tmpl)
	dir := t.TempDir()
	for _, e := range must(os.ReadDir(storeDir(tmpl))) {
		data := must(os.ReadFile(filepath.Join(storeDir(tmpl), e.Name())))
		os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644)
	}
	before := writeUserFiles(t, dir)
	ro := openT(t, dir, &warnings{}, func(o *Options) { o.ReadOnly = true })
	if n := checkServedBytes(t, ro, fillRecords, recordSize); n != fillRecords {
		t.Fatalf("read-only legacy store served %d of %d", n, fillRecords)
	}
	ro.Close()
	w := &warnings{}
	s := openT(t, dir, w, nil)
	if s.MovedAside() != "" || s.Mode() != ModeReadWrite {
		t.Fatalf("legacy store not adopted in place: mode %s, moved %q, warnings %q", s.Mode(), s.MovedAside(), w.all())
	}
	if n := checkServedBytes(t, s, fillRecords, recordSize); n != fillRecords {
		t.Fatalf("adopted store served %d of %d", n, fillRecords)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); !os.IsNotExist(err) {
		t.Fatal("Badger's files were left at the top of the dir")
	}
	userFilesUnchanged(t, dir, before)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestReadOnlyCache: a pre-populated cache that cannot be written (a shared cache on a
// cluster) serves its hits, keeps new records in memory, and is never written: not one byte,
// not even a lock file. Not writable is detected (a read-only mount: root ignores permission
// bits, so as root the test uses a read-only bind mount when it may, and otherwise checks
// the detection through the hook and the mode through the explicit option).
func TestReadOnlyCache(t *testing.T) {
	dir := t.TempDir()
	fillDir(t, dir)
	os.Remove(filepath.Join(dir, lockFileName))
	check := func(t *testing.T, opts func(*Options), wantWarning bool) {
		before := snapshot(t, dir)
		w := &warnings{}
		s := openT(t, dir, w, opts)
		if s.Mode() != ModeReadOnly {
			t.Fatalf("mode %s, want read-only (warnings %q)", s.Mode(), w.all())
		}
		if n := checkServedBytes(t, s, fillRecords, recordSize); n != fillRecords {
			t.Fatalf("served %d of %d hits", n, fillRecords)
		}
		k := testKey(t, KindKernel, fillRecords+1)
		if err := s.Put(k, &Record{Payload: []byte("compiled in memory")}); err != nil {
			t.Fatal(err)
		}
		if r, ok := s.Get(k); !ok || !bytes.Equal(r.Payload, []byte("compiled in memory")) {
			t.Fatal("a miss compiled in this process is not served from memory")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := w.count("not writable"); wantWarning && got != 1 || !wantWarning && got != 0 {
			t.Fatalf("warnings %q", w.all())
		}
		after := snapshot(t, dir)
		if len(after) != len(before) {
			t.Fatalf("entries changed: %d -> %d", len(before), len(after))
		}
		for name, v := range before {
			if after[name] != v {
				t.Fatalf("%s was written", name)
			}
		}
	}
	t.Run("explicit", func(t *testing.T) { check(t, func(o *Options) { o.ReadOnly = true }, false) })
	t.Run("detected", func(t *testing.T) {
		if os.Geteuid() != 0 {
			os.Chmod(dir, 0o555)
			defer os.Chmod(dir, 0o755)
			check(t, nil, true)
			return
		}
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err == nil {
			defer syscall.Unmount(dir, syscall.MNT_DETACH)
			if err := syscall.Mount("", dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err == nil {
				check(t, nil, true)
				return
			}
		}
		t.Log("root without mount rights: checking the detection through its hook")
		old := writableHook
		writableHook = func(d string) bool { return d != dir && old(d) }
		defer func() { writableHook = old }()
		check(t, nil, true)
	})
}
