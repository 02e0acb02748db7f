//go:build linux

package cache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withFreeSpace makes the store see free bytes on every filesystem.
func withFreeSpace(t *testing.T, free *uint64) {
	old := freeSpace
	freeSpace = func(string) (uint64, error) { return *free, nil }
	t.Cleanup(func() { freeSpace = old })
}

// A filesystem that fills up while a store writes: Put stops writing (the records stay in
// memory and are served for the process), warns once, and the store stays intact; opened on
// a full filesystem a store reads its records and writes nothing; Clear then deletes its
// files, freeing the space.
func TestLowSpaceStopsWrites(t *testing.T) {
	free := uint64(1 << 40)
	withFreeSpace(t, &free)
	dir := t.TempDir()
	w := &warnings{}
	s := openT(t, dir, w, nil)
	put := func(s *Store, from, to int) {
		for i := from; i < to; i++ {
			if err := s.Put(testKey(t, KindKernel, i), &Record{Payload: testPayload(i, 500)}); err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
	}
	size := func(int) int { return 500 }
	put(s, 0, 10)
	free = MinFreeBytes - 1
	put(s, 10, 20)
	if !s.OutOfSpace() || w.count("free") != 1 || len(w.all()) != 1 {
		t.Fatalf("out of space %v, warnings %q", s.OutOfSpace(), w.all())
	}
	if served := checkServedBytes(t, s, 20, size); served != 20 {
		t.Fatalf("served %d of 20 records in the process that put them", served)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	w = &warnings{}
	before := snapshot(t, dir)
	full := openT(t, dir, w, nil)
	if full.Mode() != ModeReadOnly || !full.OutOfSpace() || w.count("free") != 1 {
		t.Fatalf("opened on a full filesystem: mode %s, out of space %v, warnings %q", full.Mode(), full.OutOfSpace(), w.all())
	}
	if served := checkServedBytes(t, full, 20, size); served != 10 {
		t.Fatalf("served %d records, want the 10 written before the disk filled", served)
	}
	put(full, 20, 30)
	if _, ok := full.Get(testKey(t, KindKernel, 25)); !ok {
		t.Fatal("a record put on a full filesystem is not served from memory")
	}
	if _, err := full.GC(); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("GC on a full filesystem: %v", err)
	}
	if after := snapshot(t, dir); len(after) != len(before) {
		t.Fatal("a store on a full filesystem changed its directory")
	} else {
		for name, v := range before {
			if after[name] != v {
				t.Fatalf("a store on a full filesystem changed %s", name)
			}
		}
	}
	rep, err := full.Clear()
	if err != nil || rep.Removed != 20 { // 10 in the directory, 10 put in memory
		t.Fatalf("clear on a full filesystem: %+v, %v", rep, err)
	}
	full.Close()

	free = 1 << 40
	w = &warnings{}
	again := openT(t, dir, w, nil)
	defer again.Close()
	if again.Mode() != ModeReadWrite || again.MovedAside() != "" || len(w.all()) != 0 {
		t.Fatalf("after clear: mode %s, moved aside %q, warnings %q", again.Mode(), again.MovedAside(), w.all())
	}
	if served := checkServedBytes(t, again, 30, size); served != 0 {
		t.Fatalf("served %d records after clear", served)
	}
	checkUsable(t, again, dir)
}

// mountTmpfs mounts a tmpfs of size (mount's syntax) at a new directory, or skips.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v); run as root, or in a container allowed to mount", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillUp writes a file in dir until the filesystem has no byte left.
func fillUp(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for len(chunk) > 0 {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
}

// On a filesystem that is really full, a writable open fails (here Badger cannot write its
// pid file, the free-space check being fooled): that is a full disk, not damage: nothing is
// moved aside, and the store is read. The sidecar is removed first, as after a crash, so
// that nothing Open deletes frees a page that Badger would then map.
func TestFullFilesystemIsNotDamage(t *testing.T) {
	free := uint64(1 << 40) // the check sees space (an 8 MiB filesystem); the writes find none
	withFreeSpace(t, &free)
	dir := filepath.Join(mountTmpfs(t, "8m"), "cache")
	fillDir(t, dir)
	if err := os.Remove(filepath.Join(storeDir(dir), sidecarName)); err != nil {
		t.Fatal(err)
	}
	fillUp(t, filepath.Dir(dir))
	w := &warnings{}
	s := openT(t, dir, w, smallTables)
	defer s.Close()
	if s.Mode() != ModeReadOnly || s.MovedAside() != "" || w.count("no space left on device") != 1 {
		t.Fatalf("mode %s, moved aside %q, warnings %q", s.Mode(), s.MovedAside(), w.all())
	}
	if served := checkServedBytes(t, s, fillRecords, recordSize); served != fillRecords {
		t.Fatalf("served %d of %d records; warnings %q", served, fillRecords, w.all())
	}
	if inside, _ := DamagedCopies(dir); len(inside) != 0 {
		t.Fatalf("moved aside: %v", inside)
	}
}
