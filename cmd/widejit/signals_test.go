package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/internal/engine"
)

// bigOutputGraph has 64 MiB of outputs (32 models x 1024 x 512 float32), so that writing
// them takes long enough to be interrupted.
const bigOutputGraph = `{
  "format": "widejit.graph/v1",
  "n": 32,
  "inputs": [{"name": "x", "shape": [1024, 4], "dtype": "float32"}],
  "params": [{"name": "fc.weight", "shape": [512, 4], "dtype": "float32"}, {"name": "fc.bias", "shape": [512], "dtype": "float32"}],
  "nodes": [{"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "fc.weight", "bias": "fc.bias"}, "attrs": {"in_features": 4, "out_features": 512}}],
  "outputs": ["fc"],
  "init": {"seed": 0}
}`

// child is widejit run as a process of its own (this test binary as the command).
type child struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

func startCLI(t *testing.T, args ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(exe, args...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), "WIDEJIT_TEST_AS_CLI=1", "XDG_CONFIG_HOME="+t.TempDir())
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// wait waits for the child to exit and returns its exit code (-1: killed by a signal).
func (c *child) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("widejit %v did not exit within 30 s\n%s", c.cmd.Args[1:], c.stderr.String())
	}
	return c.cmd.ProcessState.ExitCode()
}

// temporaries lists the temporary output files in dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// signalWhileWriting starts widejit args, sends sig once a temporary output file appears in
// dir, and returns the exit code; ok is false when the command finished before one was seen.
func signalWhileWriting(t *testing.T, dir string, sig syscall.Signal, args ...string) (code int, stderr string, ok bool) {
	t.Helper()
	c := startCLI(t, args...)
	for {
		select {
		case <-c.done:
			return c.wait(t), c.stderr.String(), false
		default:
		}
		if len(temporaries(t, dir)) > 0 {
			c.cmd.Process.Signal(sig)
			return c.wait(t), c.stderr.String(), true
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// SIGINT or SIGTERM while `run --out` or `merge --out` writes: the temporary file is removed,
// the file --out names keeps its old bytes, the process exits 130 or 143, and the cache it
// had open is usable at once by the next command (lock released, nothing moved aside).
func TestSignalDuringOutputWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB outputs in child processes; run without -short")
	}
	graph := writeGraph(t, bigOutputGraph)
	kc := filepath.Join(t.TempDir(), "kc")
	parts := t.TempDir()
	p0, p1 := filepath.Join(parts, "p0.safetensors"), filepath.Join(parts, "p1.safetensors")
	runOK(t, "--cache-dir", kc, "run", graph, "--device", "cpu", "--shard", "0/2", "--out", p0)
	runOK(t, "--cache-dir", kc, "run", graph, "--device", "cpu", "--shard", "1/2", "--out", p1)
	commands := map[string]func(out string) []string{
		"run": func(out string) []string {
			return []string{"--cache-dir", kc, "run", graph, "--device", "cpu", "--out", out}
		},
		"merge": func(out string) []string { return []string{"merge", p0, p1, "--out", out} },
	}
	for name, args := range commands {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(fmt.Sprintf("%s/%v", name, sig), func(t *testing.T) {
				dir := t.TempDir()
				out := filepath.Join(dir, "out.safetensors")
				caught := false
				for try := 0; try < 5 && !caught; try++ {
					if err := os.WriteFile(out, []byte("the user's old outputs"), 0o644); err != nil {
						t.Fatal(err)
					}
					code, stderr, ok := signalWhileWriting(t, dir, sig, args(out)...)
					if !ok {
						t.Logf("try %d: finished (exit %d) before a temporary file was seen", try, code)
						continue
					}
					caught = true
					if want := 128 + int(sig); code != want {
						t.Fatalf("exit %d, want %d\n%s", code, want, stderr)
					}
					if !strings.Contains(stderr, "interrupted") {
						t.Errorf("stderr does not say it was interrupted:\n%s", stderr)
					}
					if left := temporaries(t, dir); len(left) > 0 {
						t.Fatalf("temporary files left behind: %v\n%s", left, stderr)
					}
					if got, _ := os.ReadFile(out); string(got) != "the user's old outputs" {
						t.Fatalf("--out was changed (%d bytes)", len(got))
					}
				}
				if !caught {
					t.Fatal("5 tries finished before their output was being written")
				}
				checkCacheKept(t, kc, 0)
			})
		}
	}
}

// SIGINT or SIGTERM in the middle of `tune --export`: exit 130 or 143, no temporary file,
// the export file as it was, and the cache usable at once.
func TestSignalDuringTune(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes a 64 MiB-output graph in child processes; run without -short")
	}
	graph := writeGraph(t, bigOutputGraph)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			kc := filepath.Join(t.TempDir(), "kc")
			dir := t.TempDir()
			export := filepath.Join(dir, "timings.json")
			if err := os.WriteFile(export, []byte("the user's old timings"), 0o644); err != nil {
				t.Fatal(err)
			}
			c := startCLI(t, "--cache-dir", kc, "tune", graph, "--device", "cpu", "--reps", "20", "--export", export)
			time.Sleep(300 * time.Millisecond)
			c.cmd.Process.Signal(sig)
			if code := c.wait(t); code != 128+int(sig) {
				t.Fatalf("exit %d, want %d\n%s", code, 128+int(sig), c.stderr.String())
			}
			if left := temporaries(t, dir); len(left) > 0 {
				t.Fatalf("temporary files left behind: %v", left)
			}
			if got, _ := os.ReadFile(export); string(got) != "the user's old timings" {
				t.Fatalf("--export was changed: %q", got)
			}
			checkCacheKept(t, kc, 0)
		})
	}
}

// SIGTERM while `cache populate --cubin` runs ptxas: the ptxas is killed with it and its
// temporary directory removed: no process and no file is left behind; exit 143.
func TestSignalDuringPopulateCubinLeavesNoProcess(t *testing.T) {
	if _, _, err := engine.FindPtxas(); err != nil {
		t.Skipf("needs ptxas (bash .ci/setup): %v", err)
	}
	tmp := t.TempDir() // the child's TMPDIR, where it assembles cubins
	t.Setenv("TMPDIR", tmp)
	kc := filepath.Join(t.TempDir(), "kc")
	c := startCLI(t, "--cache-dir", kc, "cache", "populate", "../../bench/zoo/transformer.json", "--arch", "sm_90", "--cubin", "--json")
	for running := false; !running; {
		select {
		case <-c.done:
			t.Fatalf("populate finished before ptxas was seen running\n%s", c.stderr.String())
		default:
		}
		running = len(processesUsing(t, tmp)) > 0
		time.Sleep(200 * time.Microsecond)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	if code := c.wait(t); code != 143 {
		t.Fatalf("exit %d, want 143\n%s", code, c.stderr.String())
	}
	if left := processesUsing(t, tmp); len(left) > 0 {
		t.Fatalf("processes left behind: %q", left)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Fatalf("left in TMPDIR: %v", ents)
	}
	checkCacheKept(t, kc, 0)
}

// processesUsing lists the command lines of the processes that name dir in their arguments.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	if len(cmdlines) == 0 {
		t.Skip("no /proc to look for processes in")
	}
	var out []string
	for _, p := range cmdlines {
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), dir) {
			out = append(out, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return out
}

// checkCacheKept asserts that the next command opens the cache dir at once, read-write,
// without moving anything aside, and finds at least atLeast records.
func checkCacheKept(t *testing.T, dir string, atLeast int) {
	t.Helper()
	old := cacheAdminLockWait
	cacheAdminLockWait = -1 // no waiting: the lock must be free
	defer func() { cacheAdminLockWait = old }()
	code, out, errOut := runCLI(t, "--cache-dir", dir, "cache", "stats", "--json")
	var st cache.Stats
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("cache stats: exit %d\n%s%s", code, out, errOut)
	}
	if st.Mode != cache.ModeReadWrite || st.MovedAside != "" || errOut != "" || st.Records < atLeast {
		t.Fatalf("cache after the signal: mode %s, moved aside %q, %d records (want >= %d), stderr %q", st.Mode, st.MovedAside, st.Records, atLeast, errOut)
	}
	if inside, _ := cache.DamagedCopies(dir); len(inside) > 0 {
		t.Fatalf("stores moved aside: %v", inside)
	}
}

// populateKillGraph and its flags make a populate of a few hundred kernels (about 2 MiB):
// kills land while it compiles, while it writes and while it closes the store.
var populateKillArgs = []string{"cache", "populate", "../../bench/zoo/transformer.json", "--all-strategies",
	"--arch", "sm_80,sm_90", "--n", "1,2", "--json"}

// `cache populate` killed (SIGKILL), interrupted (SIGINT) or terminated (SIGTERM) 24 times at
// moments spread over its run, on a fresh cache and on a populated one: no cache is ever
// declared damaged or moved aside, a populated cache keeps its records, the lock is free
// for the next command, and SIGINT and SIGTERM exit 130 and 143.
func TestPopulateKilledLosesNoCache(t *testing.T) {
	if testing.Short() {
		t.Skip("kills populate 24 times; run without -short")
	}
	// a populated cache to copy: the CPU's kernels of the same graph
	template := filepath.Join(t.TempDir(), "kc")
	runOK(t, "--cache-dir", template, "cache", "populate", "../../bench/zoo/transformer.json", "--n", "1,2", "--json")
	var st cache.Stats
	if err := json.Unmarshal([]byte(runOK(t, "--cache-dir", template, "cache", "stats", "--json")), &st); err != nil || st.Records == 0 {
		t.Fatalf("template cache: %v, %+v", err, st)
	}
	populated := st.Records
	// how long an uninterrupted populate takes here
	start := time.Now()
	c := startCLI(t, append([]string{"--cache-dir", filepath.Join(t.TempDir(), "kc")}, populateKillArgs...)...)
	if code := c.wait(t); code != 0 {
		t.Fatalf("populate: exit %d\n%s", code, c.stderr.String())
	}
	full := time.Since(start)
	signals := []syscall.Signal{syscall.SIGKILL, syscall.SIGINT, syscall.SIGTERM}
	const kills = 24
	finished := 0
	for i := range kills {
		dir := filepath.Join(t.TempDir(), "kc")
		want := 0
		if i%2 == 1 {
			copyTree(t, template, dir)
			want = populated
		}
		sig := signals[i%len(signals)]
		c := startCLI(t, append([]string{"--cache-dir", dir}, populateKillArgs...)...)
		when := fmt.Sprint(full * time.Duration(i) / kills)
		if i%4 == 3 {
			// in the middle of a flush: as soon as a table appears that the MANIFEST may not name yet
			when = "at its first new table"
			awaitNewTable(t, c, filepath.Join(dir, "kernels"))
		} else {
			time.Sleep(full * time.Duration(i) / kills)
		}
		// Badger's LOCK exists from the store's Open, which comes after the CLI handles its
		// signals: an earlier SIGINT or SIGTERM (a loaded machine's slow start) may still meet
		// the default action and kill the process, which must lose no cache either
		_, err := os.Stat(filepath.Join(dir, "kernels", "LOCK"))
		handling := err == nil
		c.cmd.Process.Signal(sig)
		code := c.wait(t)
		switch {
		case code == 0:
			finished++
		case code == -1 && (sig == syscall.SIGKILL || !handling):
		case sig != syscall.SIGKILL && code == 128+int(sig):
		default:
			t.Fatalf("kill %d (%v %s): exit %d\n%s", i, sig, when, code, c.stderr.String())
		}
		checkCacheKept(t, dir, want)
	}
	t.Logf("%d kills over %v; %d populates finished before their signal", kills, full, finished)
}

// awaitNewTable returns as soon as the store dir holds a table file it did not hold when
// called, or the child has exited.
func awaitNewTable(t *testing.T, c *child, dir string) {
	t.Helper()
	tables := func() map[string]bool {
		got := map[string]bool{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".sst") {
				got[e.Name()] = true
			}
		}
		return got
	}
	before := tables()
	for {
		select {
		case <-c.done:
			return
		default:
		}
		for name := range tables() {
			if !before[name] {
				return
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// copyTree copies the directory from (regular files and directories) to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}
