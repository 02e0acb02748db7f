//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/widejit/widejit/cache"
)

// A full disk under the cache: every command warns and goes on without writing the cache,
// none crashes (Badger would die of SIGBUS writing a memory-mapped file), none moves the
// store aside. populate says it stored nothing (exit 1); run hits the kernels already there;
// stats, ls and verify read them; gc says the disk is full (exit 1); clear deletes the store,
// which frees the space, and populate then works again.
func TestFullDiskCacheBehaves(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=80m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v); run as root, or in a container allowed to mount", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "kc")
	runOK(t, "--cache-dir", dir, "cache", "populate", mlpGraph, "--json")
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 1<<20); len(chunk) > 0; {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
	f.Close()

	noCrash := func(what string, code int, errOut string) {
		t.Helper()
		if code == 2 || strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "SIGBUS") || strings.Contains(errOut, "was damaged") {
			t.Fatalf("%s on a full disk: exit %d\n%s", what, code, errOut)
		}
		if !strings.Contains(errOut, "widejit keeps free") {
			t.Errorf("%s on a full disk: no warning about the free space:\n%s", what, errOut)
		}
	}
	code, _, errOut := runCLI(t, "--cache-dir", dir, "cache", "populate", mlpGraph, "--json")
	noCrash("populate", code, errOut)
	if code != exitFailure || !strings.Contains(errOut, "nothing could be stored") {
		t.Fatalf("populate on a full disk: exit %d\n%s", code, errOut)
	}
	code, out, errOut := runCLI(t, "--cache-dir", dir, "run", mlpGraph, "--device", "cpu", "--json",
		"--inputs", mlpInputs, "--check", mlpExpected)
	noCrash("run", code, errOut)
	var r runJSON
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.Check.OK || r.Cache.Hits != r.Plan.Kernels {
		t.Fatalf("run on a full disk: exit %d, want a checked run hitting every kernel\n%s%s", code, out, errOut)
	}
	for _, sub := range []string{"stats", "ls", "verify"} {
		code, out, errOut := runCLI(t, "--cache-dir", dir, "cache", sub, "--json")
		noCrash("cache "+sub, code, errOut)
		var got struct {
			Records int           `json:"records"`
			Entries []cache.Entry `json:"entries"`
			Checked int           `json:"checked"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || int64(got.Records+len(got.Entries)+got.Checked) != r.Plan.Kernels {
			t.Fatalf("cache %s on a full disk: exit %d, want %d records\n%s%s", sub, code, r.Plan.Kernels, out, errOut)
		}
	}
	code, _, errOut = runCLI(t, "--cache-dir", dir, "cache", "gc")
	noCrash("cache gc", code, errOut)
	if code != exitFailure || !strings.Contains(errOut, "its filesystem is full") {
		t.Fatalf("cache gc on a full disk: exit %d\n%s", code, errOut)
	}
	code, out, errOut = runCLI(t, "--cache-dir", dir, "cache", "clear")
	noCrash("cache clear", code, errOut)
	if code != 0 || !strings.Contains(out, "removed 3 records") {
		t.Fatalf("cache clear on a full disk: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p := populate(t, dir, mlpGraph)
	if int64(p.Misses) != r.Plan.Kernels {
		t.Fatalf("populate after clear and freeing space: %+v, want %d misses", p, r.Plan.Kernels)
	}
	if inside, _ := cache.DamagedCopies(dir); len(inside) != 0 {
		t.Fatalf("moved aside: %v", inside)
	}
}
