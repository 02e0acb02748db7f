package cache

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A crash in the middle of a flush or compaction leaves a table the MANIFEST does not name
// yet, and a crash right after creating a memtable or value log leaves it empty. That is
// normal: Open deletes those files and keeps the store (nothing moved aside, every record
// served); Badger itself would delete such tables, and refuse to open empty logs. A read-only
// open may not delete them: it reads nothing from the store and changes nothing.
func TestCrashLeftoversAreDropped(t *testing.T) {
	crashed := t.TempDir()
	crashSnapshot(t, crashed)
	crashSize := func(i int) int {
		if i >= fillRecords {
			return 600
		}
		return recordSize(i)
	}
	copyTable := func(fraction int) func(dir string) (string, error) {
		return func(dir string) (string, error) {
			data, err := os.ReadFile(findFile(t, dir, ".sst"))
			if err != nil {
				return "", err
			}
			path := filepath.Join(storeDir(dir), "009999.sst")
			return path, os.WriteFile(path, data[:len(data)/fraction], 0o644)
		}
	}
	empty := func(name string) func(dir string) (string, error) {
		return func(dir string) (string, error) {
			path := filepath.Join(storeDir(dir), name)
			return path, os.WriteFile(path, nil, 0o644)
		}
	}
	leftovers := map[string]func(dir string) (string, error){
		"complete table":     copyTable(1),
		"partial table":      copyTable(3),
		"empty memtable log": empty("99999.mem"),
		"empty value log":    empty("000099.vlog"),
	}
	for name, leave := range leftovers {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			copyDir(t, crashed, dir)
			extra, err := leave(dir)
			if err != nil {
				t.Fatal(err)
			}

			before := snapshot(t, dir)
			w := &warnings{}
			ro := openT(t, dir, w, func(o *Options) { smallTables(o); o.ReadOnly = true })
			if served := checkServedBytes(t, ro, crashRecords, crashSize); served != 0 || w.count("interrupted") != 1 {
				t.Fatalf("read-only open of an interrupted store: served %d, warnings %q", served, w.all())
			}
			ro.Close()
			if after := snapshot(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatal("a read-only open changed the directory")
			}

			w = &warnings{}
			s := openT(t, dir, w, smallTables)
			if s.Mode() != ModeReadWrite || s.MovedAside() != "" || len(w.all()) != 0 {
				t.Fatalf("mode %s, moved aside %q, warnings %q: want the store kept, silently", s.Mode(), s.MovedAside(), w.all())
			}
			if _, err := os.Stat(extra); !os.IsNotExist(err) {
				t.Fatalf("%s is still there (%v)", extra, err)
			}
			if served := checkServedBytes(t, s, crashRecords, crashSize); served != crashRecords {
				t.Fatalf("served %d of %d records after recovery", served, crashRecords)
			}
			checkUsable(t, s, dir)
		})
	}
}

// killEnv makes this test binary a writer that TestKilledWriterLosesNothing kills:
// <dir>:<first record>.
const killEnv = "WIDEJIT_CACHE_TEST_KILLED_WRITER"

// killSize is the payload size of record i of the kill test: small ones go to the tables,
// large ones to the value log.
func killSize(i int) int { return 300 + (i%5)*700 }

// TestKilledWriterProcess is a writer, not a test: it puts records from the first one on,
// printing each number once its Put returned, until it is killed (small tables: it flushes
// and compacts all the time).
func TestKilledWriterProcess(t *testing.T) {
	spec := os.Getenv(killEnv)
	if spec == "" {
		t.Skip("helper process for TestKilledWriterLosesNothing")
	}
	i := strings.LastIndexByte(spec, ':')
	first, _ := strconv.Atoi(spec[i+1:])
	s, err := Open(spec[:i], Options{Warn: func(m string) { fmt.Fprintln(os.Stderr, "warning:", m) },
		memTableSize: 64 << 10, valueThreshold: 1 << 10})
	if err != nil || s.Mode() != ModeReadWrite {
		t.Fatalf("open: %v, mode %s", err, s.Mode())
	}
	for n := first; ; n++ {
		if err := s.Put(testKey(t, KindKernel, n), &Record{Name: "k", Payload: testPayload(n, killSize(n))}); err != nil {
			t.Fatal(err)
		}
		fmt.Println(n)
		if (n-first)%500 == 499 {
			// a clean close and reopen now and then: kills also land in Close's flush
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(spec[:i], Options{memTableSize: 64 << 10, valueThreshold: 1 << 10}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A writer killed (SIGKILL) at varied moments, many times over on one directory (fresh, then
// ever fuller): every Open afterwards keeps the store (never moved aside, no warning) and
// serves every record whose Put had returned, with its bytes.
func TestKilledWriterLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a writer process 24 times; run without -short")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(29))
	acked, unlisted := 0, 0
	for kill := 0; kill < 24; kill++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", killEnv, dir, acked))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// kill after a varied number of records (some kills land before the first one)
		target := acked + rng.Intn(1200)
		lines := bufio.NewScanner(out)
		deadline := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
		for acked < target && lines.Scan() {
			n, err := strconv.Atoi(lines.Text())
			if err != nil || n != acked {
				t.Fatalf("writer printed %q, want %d", lines.Text(), acked)
			}
			acked++
		}
		if kill%3 == 0 {
			time.Sleep(time.Duration(rng.Intn(3000)) * time.Microsecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		deadline.Stop()
		for lines.Scan() {
			if n, err := strconv.Atoi(lines.Text()); err == nil && n == acked {
				acked++
			}
		}
		cmd.Wait()
		if strings.Contains(stderr.String(), "FAIL") || strings.Contains(stderr.String(), "warning") {
			t.Fatalf("writer: %s", stderr.String())
		}
		if files, err := storeFiles(storeDir(dir)); err == nil {
			if u, _ := checkManifest(storeDir(dir), files); len(u) > 0 {
				unlisted++
			}
		}

		w := &warnings{}
		s := openT(t, dir, w, smallTables)
		if s.Mode() != ModeReadWrite || s.MovedAside() != "" || len(w.all()) != 0 {
			t.Fatalf("kill %d (after %d records): mode %s, moved aside %q, warnings %q", kill, acked, s.Mode(), s.MovedAside(), w.all())
		}
		if served := checkServedBytes(t, s, acked, killSize); served != acked {
			t.Fatalf("kill %d: %d of the %d records put are served", kill, served, acked)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if inside, _ := DamagedCopies(dir); len(inside) != 0 {
		t.Fatalf("stores moved aside: %v", inside)
	}
	t.Logf("24 kills, %d records, %d kills left a table the MANIFEST did not name", acked, unlisted)
}
