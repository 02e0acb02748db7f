package cache

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WasmReport describes the plugins' compilation cache (<dir>/wasm, written by wazero).
type WasmReport struct {
	Dir     string   `json:"dir"`
	Files   int      `json:"files"`
	Bytes   int64    `json:"bytes"`
	Bad     []string `json:"bad"`     // entries that are not compiled modules (removed when writable)
	Removed int      `json:"removed"` // bad entries and stale temporary files removed
}

// wazeroMagic starts every compiled module wazero stores; a file without it cannot be read
// back (wazero then fails the compile: plugins.Load clears the cache and recompiles).
var wazeroMagic = []byte("WAZEVO")

// checkWasm inspects every entry of the compilation cache under dir; with fix it removes bad
// entries and temporary files older than an hour (left by a killed compile).
func checkWasm(dir string, fix bool) WasmReport {
	rep := WasmReport{Dir: dir, Bad: []string{}}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		if strings.HasSuffix(path, ".tmp") {
			if fix && time.Since(info.ModTime()) > time.Hour && os.Remove(path) == nil {
				rep.Removed++
			}
			return nil
		}
		rep.Files++
		rep.Bytes += allocatedBytes(info)
		if !hasMagic(path) {
			rep.Bad = append(rep.Bad, path)
			if fix && os.Remove(path) == nil {
				rep.Removed++
			}
		}
		return nil
	})
	return rep
}

func hasMagic(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(wazeroMagic))
	_, err = io.ReadFull(f, head)
	return err == nil && bytes.Equal(head, wazeroMagic)
}

// clearWasm removes the compilation cache's contents (not the directory).
func clearWasm(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return 0, err
		}
	}
	return len(ents), nil
}
