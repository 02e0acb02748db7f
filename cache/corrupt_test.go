package cache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// smallTables makes Badger flush tables and put large values in the value log quickly.
func smallTables(o *Options) {
	o.memTableSize = 256 << 10
	o.valueThreshold = 1 << 10
}

const fillRecords = 400

// recordSize alternates small (in the LSM tree) and large (in the value log) payloads.
func recordSize(i int) int {
	if i%2 == 0 {
		return 600
	}
	return 3000
}

// fillDir writes fillRecords records and closes the store cleanly.
func fillDir(t *testing.T, dir string) {
	t.Helper()
	s := openT(t, dir, &warnings{}, smallTables)
	for i := 0; i < fillRecords; i++ {
		if err := s.Put(testKey(t, KindKernel, i), &Record{Name: "k", Target: "sm_90", Payload: testPayload(i, recordSize(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// storeDir is where a cache directory keeps its Badger store (layout 2).
func storeDir(dir string) string { return filepath.Join(dir, kernelsName) }

// listFiles lists the store files of the cache directory dir.
func listFiles(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(storeDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		info, _ := e.Info()
		out = append(out, e.Name()+":"+strconv.FormatInt(info.Size(), 10))
	}
	sort.Strings(out)
	return out
}

func TestFillMakesEveryFileKind(t *testing.T) {
	dir := t.TempDir()
	fillDir(t, dir)
	files := strings.Join(listFiles(t, dir), " ")
	for _, want := range []string{"MANIFEST", "KEYREGISTRY", ".sst", ".vlog", sidecarName} {
		if !strings.Contains(files, want) {
			t.Errorf("no %s file after filling: %s", want, files)
		}
	}
	t.Log(files)
}

// crashSnapshot fills a store and copies its files while it is still open, as a crash would
// leave them: no sidecar, a live memtable log (.mem), tables and a value log.
func crashSnapshot(t *testing.T, dir string) {
	t.Helper()
	live := t.TempDir()
	s := openT(t, live, &warnings{}, smallTables)
	defer s.Close()
	for i := 0; i < crashRecords; i++ {
		size := recordSize(i)
		if i >= fillRecords {
			size = 600
		}
		if err := s.Put(testKey(t, KindKernel, i), &Record{Name: "k", Payload: testPayload(i, size)}); err != nil {
			t.Fatal(err)
		}
	}
	waitForFlushes(t, live)
	copyDir(t, live, dir)
}

// waitForFlushes waits until Badger has stopped creating tables (a memtable flush writes the
// table before naming it in the MANIFEST; a copy in between looks like damage).
func waitForFlushes(t *testing.T, dir string) {
	prev := ""
	dir = storeDir(dir)
	for i := 0; i < 100; i++ {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		cur := names(ents)
		if info, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
			cur += strconv.FormatInt(info.Size(), 10)
		}
		if cur == prev {
			return
		}
		prev = cur
		time.Sleep(50 * time.Millisecond)
	}
}

const crashRecords = 800

// copyDir copies the store files of cache directory from into cache directory to, starting
// over when Badger removes a file mid-copy (a flushed memtable log).
func copyDir(t *testing.T, from, to string) {
	from, to = storeDir(from), storeDir(to)
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 20; attempt++ {
		if copyOnce(from, to) == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("could not take a consistent copy of the live store")
}

func copyOnce(from, to string) error {
	old, _ := os.ReadDir(to)
	for _, e := range old {
		os.Remove(filepath.Join(to, e.Name()))
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == lockFileName || e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	after, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if names(after) != names(ents) {
		return errors.New("files changed while copying")
	}
	return nil
}

func names(ents []os.DirEntry) string {
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(e.Name() + " ")
	}
	return b.String()
}

func TestCrashSnapshotRecovers(t *testing.T) {
	dir := t.TempDir()
	crashSnapshot(t, dir)
	files := strings.Join(listFiles(t, dir), " ")
	for _, want := range []string{"MANIFEST", ".sst", ".vlog", ".mem"} {
		if !strings.Contains(files, want) {
			t.Errorf("no %s file in the crash snapshot: %s", want, files)
		}
	}
	w := &warnings{}
	s := openT(t, dir, w, smallTables)
	defer s.Close()
	if s.Mode() != ModeReadWrite || s.MovedAside() != "" {
		t.Fatalf("an undamaged crash snapshot was not reopened in place: mode %s, moved %q, warnings %q", s.Mode(), s.MovedAside(), w.all())
	}
	for i := 0; i < crashRecords; i++ {
		size := recordSize(i)
		if i >= fillRecords {
			size = 600
		}
		r, ok := s.Get(testKey(t, KindKernel, i))
		if !ok || !bytes.Equal(r.Payload, testPayload(i, size)) {
			t.Fatalf("record %d lost or wrong after crash recovery", i)
		}
	}
}

// A damage is one way of breaking a file.
type damage struct {
	name  string
	apply func(path string) error
}

var damages = []damage{
	{"truncate-half", func(p string) error { return truncateTo(p, 0.5) }},
	{"truncate-empty", func(p string) error { return truncateTo(p, 0) }},
	{"truncate-last-byte", func(p string) error {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		return os.Truncate(p, info.Size()-1)
	}},
	{"overwrite-middle", func(p string) error { return overwrite(p, 0.5, 64) }},
	{"overwrite-start", func(p string) error { return overwrite(p, 0, 64) }},
	{"overwrite-all", func(p string) error { return overwrite(p, 0, -1) }},
	{"append-garbage", func(p string) error {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write(testPayload(99, 1000))
		return err
	}},
}

func truncateTo(p string, frac float64) error {
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	return os.Truncate(p, int64(float64(info.Size())*frac))
}

// overwrite puts n garbage bytes (n < 0: to the end) at frac of the file.
func overwrite(p string, frac float64, n int) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	at := int(float64(len(data)) * frac)
	if n < 0 || at+n > len(data) {
		n = len(data) - at
	}
	g := testPayload(4242, n)
	for i := range g {
		data[at+i] ^= g[i] | 1 // every byte changes
	}
	return os.WriteFile(p, data, 0o644)
}

// findFile returns the store file of cache directory dir whose name ends with suffix.
func findFile(t *testing.T, dir, suffix string) string {
	t.Helper()
	dir = storeDir(dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			return filepath.Join(dir, e.Name())
		}
	}
	t.Fatalf("no *%s file in %s", suffix, dir)
	return ""
}

// checkServedBytes asserts that every record served has exactly the bytes that were put, and
// returns how many were served.
func checkServedBytes(t *testing.T, s *Store, n int, size func(int) int) int {
	t.Helper()
	served := 0
	for i := 0; i < n; i++ {
		r, ok := s.Get(testKey(t, KindKernel, i))
		if !ok {
			continue
		}
		served++
		if !bytes.Equal(r.Payload, testPayload(i, size(i))) {
			t.Fatalf("record %d served with wrong bytes", i)
		}
	}
	return served
}

// checkUsable puts, gets, closes and reopens: the store recovered must work normally.
func checkUsable(t *testing.T, s *Store, dir string) {
	t.Helper()
	k := testKey(t, KindKernel, 1_000_000)
	if err := s.Put(k, &Record{Payload: []byte("fresh")}); err != nil {
		t.Fatalf("put after recovery: %v", err)
	}
	if r, ok := s.Get(k); !ok || string(r.Payload) != "fresh" {
		t.Fatal("get after recovery")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after recovery: %v", err)
	}
	w := &warnings{}
	again := openT(t, dir, w, smallTables)
	defer again.Close()
	if r, ok := again.Get(k); !ok || string(r.Payload) != "fresh" {
		t.Fatalf("record put after recovery lost on reopen (mode %s, warnings %q)", again.Mode(), w.all())
	}
	if len(w.all()) != 0 {
		t.Fatalf("reopening the recovered store warned: %q", w.all())
	}
}

var damagedFiles = []string{"MANIFEST", "KEYREGISTRY", ".sst", ".vlog", "DISCARD"}

// With the sidecar of a clean close, every damage to every file is caught before Badger opens:
// the contents move aside, a fresh store starts, one warning says so.
func TestDamageAfterCleanCloseIsMovedAside(t *testing.T) {
	template := t.TempDir()
	fillDir(t, template)
	for _, file := range damagedFiles {
		// The sidecar compares whole files, so a few kinds of damage stand for all of them.
		for _, d := range []damage{damages[0], damages[2], damages[3], damages[6]} {
			t.Run(strings.TrimPrefix(file, ".")+"/"+d.name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "cache")
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				copyDir(t, template, dir)
				target := findFile(t, dir, file)
				if err := d.apply(target); err != nil {
					t.Fatal(err)
				}
				w := &warnings{}
				s := openT(t, dir, w, smallTables)
				if s.Mode() != ModeReadWrite {
					t.Fatalf("mode %s after recovery", s.Mode())
				}
				aside := s.MovedAside()
				if aside == "" || !strings.HasPrefix(aside, filepath.Join(dir, damagedPrefix)) {
					t.Fatalf("damaged dir not moved aside (moved to %q), warnings %q", aside, w.all())
				}
				if _, err := os.Stat(filepath.Join(aside, filepath.Base(target))); err != nil {
					t.Fatalf("damaged file not kept in %s: %v", aside, err)
				}
				if n := w.count("was damaged"); n != 1 || len(w.all()) != 1 {
					t.Fatalf("warnings %q, want exactly one about the damage", w.all())
				}
				if served := checkServedBytes(t, s, fillRecords, recordSize); served != 0 {
					t.Fatalf("fresh store served %d records", served)
				}
				checkUsable(t, s, dir)
			})
		}
	}
}

// Without a sidecar (the last writer crashed, or the sidecar itself was lost) damage is caught
// by the table check, by Badger's own checks, or per record; whatever Open decides, no wrong
// bytes are served and the store stays usable.
func TestDamageWithoutSidecarNeverServesWrongBytes(t *testing.T) {
	clean := t.TempDir()
	fillDir(t, clean)
	if err := os.Remove(filepath.Join(storeDir(clean), sidecarName)); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	crashSnapshot(t, crashed)
	crashSize := func(i int) int {
		if i >= fillRecords {
			return 600
		}
		return recordSize(i)
	}
	sources := []struct {
		name     string
		template string
		n        int
		size     func(int) int
		files    []string
	}{
		{"closed", clean, fillRecords, recordSize, damagedFiles},
		{"crashed", crashed, crashRecords, crashSize, append([]string{".mem"}, damagedFiles...)},
	}
	for _, src := range sources {
		for _, file := range src.files {
			for _, d := range damages {
				t.Run(src.name+"/"+strings.TrimPrefix(file, ".")+"/"+d.name, func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), "cache")
					if err := os.Mkdir(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					copyDir(t, src.template, dir)
					if err := d.apply(findFile(t, dir, file)); err != nil {
						t.Fatal(err)
					}
					w := &warnings{}
					s := openT(t, dir, w, smallTables)
					served := checkServedBytes(t, s, src.n, src.size)
					t.Logf("mode %s, moved aside %v, served %d/%d, warnings %d: %.200q", s.Mode(), s.MovedAside() != "", served, src.n, len(w.all()), w.all())
					if s.Mode() != ModeReadWrite {
						t.Fatalf("mode %s", s.Mode())
					}
					checkUsable(t, s, dir)
				})
			}
		}
	}
}

func TestSidecarEdgeCases(t *testing.T) {
	template := t.TempDir()
	fillDir(t, template)
	cases := []struct {
		name    string
		change  func(dir string) error
		damaged bool
	}{
		{"user file is ignored", func(dir string) error {
			return os.WriteFile(filepath.Join(storeDir(dir), "README.txt"), []byte("notes"), 0o644)
		}, false},
		{"extra table", func(dir string) error {
			return os.WriteFile(filepath.Join(storeDir(dir), "000099.sst"), testPayload(1, 4096), 0o644)
		}, true},
		{"missing value log", func(dir string) error { return os.Remove(findFile(t, dir, ".vlog")) }, true},
		{"garbage sidecar", func(dir string) error {
			return os.WriteFile(filepath.Join(storeDir(dir), sidecarName), []byte("{not json"), 0o644)
		}, true},
		{"sidecar of another format", func(dir string) error {
			return os.WriteFile(filepath.Join(storeDir(dir), sidecarName), []byte(`{"format":99,"files":[]}`), 0o644)
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			copyDir(t, template, dir)
			if err := c.change(dir); err != nil {
				t.Fatal(err)
			}
			w := &warnings{}
			s := openT(t, dir, w, smallTables)
			defer s.Close()
			if got := s.MovedAside() != ""; got != c.damaged {
				t.Fatalf("moved aside: %v, want %v (warnings %q)", got, c.damaged, w.all())
			}
			served := checkServedBytes(t, s, fillRecords, recordSize)
			if c.damaged && served != 0 || !c.damaged && served != fillRecords {
				t.Fatalf("served %d of %d records", served, fillRecords)
			}
		})
	}
}
