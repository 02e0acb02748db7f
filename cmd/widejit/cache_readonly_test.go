package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/widejit/widejit/cache"
)

// treeState records every entry under dir: path, mode, size, modification time and the
// SHA-256 of a file's bytes.
func treeState(t *testing.T, dir string) map[string]string {
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
		sum := ""
		if info.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", h.Sum(nil))
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fmt.Sprintf("%v %d %d %s", info.Mode(), info.Size(), info.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for name, v := range before {
		if after[name] != v {
			t.Errorf("%s changed %s: %q -> %q", what, name, v, after[name])
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s created %s", what, name)
		}
	}
}

// populatedCache returns a cache dir holding mlp's CPU kernels, and how many records.
func populatedCache(t *testing.T) (string, int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kc")
	runOK(t, "--cache-dir", dir, "cache", "populate", mlpGraph, "--json")
	var st cache.Stats
	if err := json.Unmarshal([]byte(runOK(t, "--cache-dir", dir, "cache", "stats", "--json")), &st); err != nil || st.Records == 0 {
		t.Fatalf("populated cache: %v, %+v", err, st)
	}
	return dir, st.Records
}

// Under --cache-read-only (or WIDEJIT_CACHE_READ_ONLY) stats, ls and verify report the
// records and leave every file and directory of the cache as it was (bytes and mtimes);
// clear and gc are refused (exit 2) and change nothing.
func TestCacheSubcommandsHonourReadOnly(t *testing.T) {
	dir, records := populatedCache(t)
	before := treeState(t, dir)
	for _, args := range [][]string{{"stats", "--json"}, {"stats"}, {"ls", "--json"}, {"ls"}, {"verify", "--json"}, {"verify"}} {
		code, out, errOut := runCLI(t, append([]string{"--cache-dir", dir, "--cache-read-only", "cache"}, args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("cache %v --cache-read-only: exit %d\n%s%s", args, code, out, errOut)
		}
		var got struct {
			Records int           `json:"records"`
			Entries []cache.Entry `json:"entries"`
			Checked int           `json:"checked"`
		}
		switch {
		case len(args) == 1:
		case json.Unmarshal([]byte(out), &got) != nil:
			t.Fatalf("cache %v: %s", args, out)
		case got.Records+len(got.Entries)+got.Checked != records:
			t.Fatalf("cache %v --cache-read-only reports %+v, want %d records", args, got, records)
		}
		sameTree(t, "cache "+strings.Join(args, " ")+" --cache-read-only", before, treeState(t, dir))
	}
	for _, sub := range []string{"clear", "gc"} {
		runFails(t, exitUsage, []string{"cache " + sub + ": the cache is read-only", "nothing was changed"},
			"--cache-dir", dir, "--cache-read-only", "cache", sub)
		sameTree(t, "cache "+sub+" --cache-read-only", before, treeState(t, dir))
	}
	t.Setenv("WIDEJIT_CACHE_READ_ONLY", "true")
	runFails(t, exitUsage, []string{"read-only"}, "--cache-dir", dir, "cache", "clear")
	sameTree(t, "cache clear with WIDEJIT_CACHE_READ_ONLY", before, treeState(t, dir))
}

// recordedLine is how tune says it recorded decisions (how many depends on the timings).
var recordedLine = regexp.MustCompile(`\nrecorded [1-9]\d* decisions in the kernel cache`)

// `tune --cache-read-only` measures and shows the decisions but says it did not record them,
// and writes nothing: not to a populated cache, and no cache dir where there was none.
func TestTuneReadOnlyRecordsNothing(t *testing.T) {
	dir, _ := populatedCache(t)
	graph := writeGraph(t, cliGraph)
	before := treeState(t, dir)
	missing := filepath.Join(t.TempDir(), "none")
	for _, d := range []string{dir, missing} {
		code, out, errOut := runCLI(t, "--cache-dir", d, "--cache-read-only", "tune", graph, "--device", "cpu", "--reps", "1")
		if code != 0 || recordedLine.MatchString(out) || !regexp.MustCompile(`\n\d+ decisions tuned, none recorded \(the kernel cache is read-only\)`).MatchString(out) {
			t.Fatalf("tune --cache-read-only: exit %d\n%s%s", code, out, errOut)
		}
		code, out, errOut = runCLI(t, "--cache-dir", d, "--cache-read-only", "tune", graph, "--device", "cpu", "--reps", "1", "--json")
		var rep struct {
			Recorded    *int   `json:"recorded"`
			NotRecorded string `json:"not_recorded"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Recorded == nil || *rep.Recorded != 0 || rep.NotRecorded == "" {
			t.Fatalf("tune --cache-read-only --json: exit %d\n%s%s", code, out, errOut)
		}
	}
	sameTree(t, "tune --cache-read-only", before, treeState(t, dir))
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("tune --cache-read-only created %s (%v)", missing, err)
	}
	// the same tune without the flag records what it measured
	code, out, _ := runCLI(t, "--cache-dir", dir, "tune", graph, "--device", "cpu", "--reps", "1")
	if code != 0 || !recordedLine.MatchString(out) {
		t.Fatalf("tune: exit %d\n%s", code, out)
	}
}

// A user who may read the cache directory but not write it (a shared cache made read-only)
// can run stats, ls and verify, which write nothing; clear is an error. As root (who ignores
// permission bits) the commands run as nobody.
func TestReadOnlyUserInspectsCache(t *testing.T) {
	// a directory every user can reach, for the cache and (as root) a copy of this binary
	base, err := os.MkdirTemp("", "widejit-readonly-user")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	populated, records := populatedCache(t)
	dir := filepath.Join(base, "kc")
	copyTree(t, populated, dir)
	// read for all, write for none
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o444)
		if d.IsDir() {
			mode = 0o555
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)
	run := func(args ...string) (int, string, string) {
		if os.Geteuid() != 0 {
			return runCLI(t, args...)
		}
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		copy := filepath.Join(base, "widejit.test")
		if _, err := os.Stat(copy); err != nil {
			data, err := os.ReadFile(exe)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(copy, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(copy, args...)
		cmd.Dir = base
		cmd.Env = []string{"WIDEJIT_TEST_AS_CLI=1", "HOME=" + base, "XDG_CONFIG_HOME=" + filepath.Join(base, "config"), "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Skipf("cannot run a process as nobody here (%v); run the test as a user other than root", err)
			}
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	for _, sub := range []string{"stats", "ls", "verify"} {
		code, out, errOut := run("--cache-dir", dir, "cache", sub, "--json")
		var got struct {
			Records int           `json:"records"`
			Entries []cache.Entry `json:"entries"`
			Checked int           `json:"checked"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Records+len(got.Entries)+got.Checked != records {
			t.Fatalf("cache %s as a read-only user: exit %d, want %d records\n%s%s", sub, code, records, out, errOut)
		}
		if !strings.Contains(errOut, "not writable; using it read-only") {
			t.Errorf("cache %s: no warning that the dir is used read-only: %q", sub, errOut)
		}
	}
	code, out, errOut := run("--cache-dir", dir, "cache", "clear")
	if code != exitFailure || !strings.Contains(errOut, "cannot be written (see the warning above); this command needs write access") {
		t.Fatalf("cache clear as a read-only user: exit %d\n%s%s", code, out, errOut)
	}
	sameTree(t, "a read-only user's commands", before, treeState(t, dir))
}
