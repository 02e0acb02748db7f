package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Layout of a cache directory. The directory may be shared with other files (a user's
// --cache-dir): widejit owns only the marker, the lock, and its subdirectories, and never
// touches anything else in it.
//
//	<dir>/widejit-cache.tag           the marker: this directory holds a widejit cache
//	<dir>/widejit-cache.tag.tmp       the marker being written (renamed to the marker at once)
//	<dir>/widejit.lock                the lock (flock) of concurrent processes
//	<dir>/kernels/                    the Badger store and its file list (widejit-files.json)
//	<dir>/kernels.damaged-<UTC time>/ damaged stores set aside (the newest keepDamaged kept)
//	<dir>/wasm/                       the plugins' compilation cache (WasmDir)
//
// Before the marker existed (layout 1) Badger's files lay in <dir> itself; such a directory
// is recognised by them and moved into kernels/ on the first writable open.
const (
	markerName    = "widejit-cache.tag"
	kernelsName   = "kernels"
	wasmName      = "wasm"
	damagedPrefix = kernelsName + ".damaged-"
	// keepDamaged is how many damaged copies are kept (the newest), for a post-mortem.
	keepDamaged = 3
)

const markerText = "widejit cache directory (layout 2): widejit owns this file, widejit.lock,\n" +
	"kernels/, kernels.damaged-*/ and wasm/, and never touches anything else here.\n"

// WasmDir is where plugins keep their compilation cache inside the cache directory dir
// ("" means DefaultDir); `widejit cache verify/clear/gc` cover it.
func WasmDir(dir string) string {
	if dir == "" {
		dir = DefaultDir()
	}
	return filepath.Join(dir, wasmName)
}

// ForeignDirError refuses a non-empty directory that is not a widejit cache: adopting it
// would mix the cache with files widejit does not own.
type ForeignDirError struct {
	Dir     string
	Entries []string // a few of its entries
}

func (e *ForeignDirError) Error() string {
	return fmt.Sprintf("cache dir %s is not empty and is not a widejit cache (it holds %s and no %s); "+
		"use an empty or new directory for the cache, nothing there was changed", e.Dir, strings.Join(e.Entries, ", "), markerName)
}

// ownedEntry reports whether name is an entry of the cache directory widejit owns. The
// marker's temporary file is one: another process adopting the directory writes it, under
// the lock, before renaming it to the marker, and an opener that reads the directory in
// between must not take it for a foreign file.
func ownedEntry(name string) bool {
	switch name {
	case markerName, markerName + ".tmp", lockFileName, kernelsName, wasmName:
		return true
	}
	return strings.HasPrefix(name, damagedPrefix)
}

// inspectDir classifies dir without changing it: marked (layout 2), legacy (layout 1, Badger
// files at the top), or new (nothing but entries widejit owns); anything else is foreign.
func inspectDir(dir string) (marked, legacy bool, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, false, err
	}
	var foreign []string
	for _, e := range ents {
		switch name := e.Name(); {
		case name == markerName:
			marked = true
		case name == sidecarName || isStoreFile(name):
			legacy = true
		case !ownedEntry(name) && name != "LOCK":
			foreign = append(foreign, name)
		}
	}
	if marked || legacy || len(foreign) == 0 {
		return marked, legacy, nil
	}
	sort.Strings(foreign)
	if len(foreign) > 5 {
		foreign = append(foreign[:5], fmt.Sprintf("%d more", len(foreign)-5))
	}
	return false, false, &ForeignDirError{Dir: dir, Entries: foreign}
}

// adoptDir, under the exclusive lock, writes the marker and moves a legacy store's files
// (Badger's and our file list) into kernels/; nothing else in dir is touched.
func adoptDir(dir string) error {
	kernels := filepath.Join(dir, kernelsName)
	if err := os.MkdirAll(kernels, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if name := e.Name(); e.Type().IsRegular() && (isStoreFile(name) || name == sidecarName || name == "LOCK") {
			if err := os.Rename(filepath.Join(dir, name), filepath.Join(kernels, name)); err != nil {
				return fmt.Errorf("moving %s into %s: %w", name, kernels, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, markerName)); err == nil {
		return nil
	}
	tmp := filepath.Join(dir, markerName+".tmp")
	if err := os.WriteFile(tmp, []byte(markerText), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, markerName))
}

// moveAside sets the damaged store dir/kernels aside as dir/kernels.damaged-<UTC time> (a
// rename: nothing is deleted), starts an empty one, and prunes the oldest copies.
func moveAside(dir string) (string, error) {
	aside := filepath.Join(dir, damagedPrefix+time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(filepath.Join(dir, kernelsName), aside); err != nil {
		return "", err
	}
	if err := os.Mkdir(filepath.Join(dir, kernelsName), 0o755); err != nil {
		return "", err
	}
	_, err := pruneDamaged(dir, keepDamaged)
	return aside, err
}

// DamagedCopies lists the damaged stores set aside in dir (newest first), and those an older
// widejit left beside it as <dir>.damaged-* (never removed: they may hold files a user had
// in the directory).
func DamagedCopies(dir string) (inside, beside []string) {
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), damagedPrefix) {
				inside = append(inside, filepath.Join(dir, e.Name()))
			}
		}
	}
	beside, _ = filepath.Glob(filepath.Clean(dir) + ".damaged-*")
	// The timestamps sort as text.
	sort.Sort(sort.Reverse(sort.StringSlice(inside)))
	sort.Sort(sort.Reverse(sort.StringSlice(beside)))
	return inside, beside
}

// pruneDamaged removes all but the newest keep damaged copies inside dir.
func pruneDamaged(dir string, keep int) ([]string, error) {
	inside, _ := DamagedCopies(dir)
	var removed []string
	var errs []error
	for i, d := range inside {
		if i < keep {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}
