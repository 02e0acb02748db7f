package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// sidecarName is the file list with checksums written on every clean close of a writable store.
const sidecarName = "widejit-files.json"

const sidecarFormat = 1

type sidecarFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

type sidecar struct {
	Format int           `json:"format"`
	Files  []sidecarFile `json:"files"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// storeFiles lists the files of dir that Badger owns (tables, value logs, memtable logs,
// MANIFEST, KEYREGISTRY, DISCARD), sorted by name. Other entries (our lock and sidecar,
// Badger's LOCK, anything a user drops there) are neither recorded nor checked.
func storeFiles(dir string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []os.DirEntry
	for _, e := range ents {
		if isStoreFile(e.Name()) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func isStoreFile(name string) bool {
	switch name {
	case "MANIFEST", "KEYREGISTRY", "DISCARD":
		return true
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if base, ok := strings.CutSuffix(name, ext); ok && base != "" && strings.Trim(base, "0123456789") == "" {
			return true
		}
	}
	return false
}

func fileCRC(path string) (int64, uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	return n, h.Sum32(), err
}

// writeSidecar records every store file's size and CRC-32C, atomically (temp file + rename).
func writeSidecar(dir string) error {
	files, err := storeFiles(dir)
	if err != nil {
		return err
	}
	sc := sidecar{Format: sidecarFormat, Files: []sidecarFile{}}
	for _, e := range files {
		if !e.Type().IsRegular() {
			continue
		}
		n, sum, err := fileCRC(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		sc.Files = append(sc.Files, sidecarFile{Name: e.Name(), Size: n, CRC32C: sum})
	}
	data, err := json.MarshalIndent(sc, "", " ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, sidecarName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, sidecarName))
}

// errNoSidecar means the directory was not closed cleanly (or is new): validate structurally.
var errNoSidecar = errors.New("no sidecar")

// checkSidecar compares the directory with the sidecar written at the last clean close.
func checkSidecar(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, sidecarName))
	if errors.Is(err, os.ErrNotExist) {
		return errNoSidecar
	}
	if err != nil {
		return err
	}
	var sc sidecar
	if err := json.Unmarshal(data, &sc); err != nil {
		return fmt.Errorf("%s: %v", sidecarName, err)
	}
	if sc.Format != sidecarFormat {
		return fmt.Errorf("%s: format %d, expected %d", sidecarName, sc.Format, sidecarFormat)
	}
	want := map[string]sidecarFile{}
	for _, f := range sc.Files {
		want[f.Name] = f
	}
	files, err := storeFiles(dir)
	if err != nil {
		return err
	}
	for _, e := range files {
		w, ok := want[e.Name()]
		if !ok {
			return fmt.Errorf("unexpected file %s (not present at the last clean close)", e.Name())
		}
		delete(want, e.Name())
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", e.Name())
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if info.Size() != w.Size {
			return fmt.Errorf("%s is %d bytes, was %d at the last clean close", e.Name(), info.Size(), w.Size)
		}
		_, sum, err := fileCRC(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if sum != w.CRC32C {
			return fmt.Errorf("%s changed since the last clean close (CRC-32C %08x, was %08x)", e.Name(), sum, w.CRC32C)
		}
	}
	for name := range want {
		return fmt.Errorf("%s is missing", name)
	}
	return nil
}

// unencryptedKeyRegistrySize is the size of Badger's KEYREGISTRY without encryption (a 16-byte
// IV and the 12-byte sanity text); widejit never enables encryption, so any other size is
// damage (and Badger would trust a garbage length in it and allocate accordingly).
const unencryptedKeyRegistrySize = 28

// errInterrupted: the last writer was killed between creating a file and making it part of
// the store: a table not yet named in the MANIFEST (a flush or compaction), or an empty
// memtable or value log (created, not yet sized). Normal after a crash, and repaired by
// deleting those files, which hold nothing the store needs and which only a writable open
// may delete.
var errInterrupted = errors.New("the last widejit writing it was interrupted; the next command that may write the cache recovers it")

// checkStructure verifies the KEYREGISTRY size, the MANIFEST against the tables on disk, and
// every table the MANIFEST names with Badger's table reader (footer, index checksum and every
// block checksum). Badger panics on some truncated tables; here that happens in our
// goroutine, under recover. Tables the MANIFEST does not name are what a crash in the middle
// of a flush or compaction leaves (their contents are still in the memtable log, or in the
// tables they were to replace), and empty .mem and .vlog files what a crash right after
// creating one leaves (Badger would refuse to open them): drop removes both; without drop
// they are errInterrupted.
func checkStructure(dir string, drop bool) error {
	files, err := storeFiles(dir)
	if err != nil {
		return err
	}
	unlisted, err := checkManifest(dir, files)
	if err != nil {
		return err
	}
	for _, e := range files {
		if strings.HasSuffix(e.Name(), ".mem") || strings.HasSuffix(e.Name(), ".vlog") {
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.Size() == 0 {
				unlisted = append(unlisted, e.Name())
			}
		}
	}
	if len(unlisted) > 0 && !drop {
		return errInterrupted
	}
	for _, name := range unlisted {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for _, e := range files {
		if e.Name() == "KEYREGISTRY" {
			if info, err := e.Info(); err == nil && info.Size() != unencryptedKeyRegistrySize {
				return fmt.Errorf("KEYREGISTRY is %d bytes, expected %d", info.Size(), unencryptedKeyRegistrySize)
			}
		}
		if !strings.HasSuffix(e.Name(), ".sst") || slices.Contains(unlisted, e.Name()) {
			continue
		}
		if err := checkTable(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func checkTable(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: unreadable table (%v)", filepath.Base(path), firstLine(fmt.Sprint(r)))
		}
	}()
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Size() < 16 {
		return fmt.Errorf("%s: table of %d bytes is truncated", filepath.Base(path), info.Size())
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("%s: %v", filepath.Base(path), err)
	}
	t, err := table.OpenTable(mf, table.Options{
		ChkMode:     options.OnTableAndBlockRead,
		Compression: tableCompression,
		BlockSize:   tableBlockSize,
	})
	if err != nil {
		return fmt.Errorf("%s: %v", filepath.Base(path), firstLine(err.Error()))
	}
	return t.MmapFile.Close(-1)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// checkManifest replays the MANIFEST with Badger's own reader, checks that every table it names
// is present, and returns the tables present that it does not name. Badger itself would
// silently drop a partial trailing entry (and then delete the tables the shortened MANIFEST no
// longer names); a kill cannot tear Badger's single write of an entry, so a partial entry is
// damage and the store is moved aside.
func checkManifest(dir string, files []os.DirEntry) (unlisted []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			unlisted, err = nil, fmt.Errorf("MANIFEST: unreadable (%v)", firstLine(fmt.Sprint(r)))
		}
	}()
	onDisk := map[uint64]string{}
	for _, e := range files {
		if id, ok := table.ParseFileID(e.Name()); ok && strings.HasSuffix(e.Name(), ".sst") {
			onDisk[id] = e.Name()
		}
	}
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if errors.Is(err, os.ErrNotExist) {
		if len(onDisk) > 0 {
			return nil, fmt.Errorf("MANIFEST is missing but %d tables exist", len(onDisk))
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	m, end, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		return nil, fmt.Errorf("MANIFEST: %v", firstLine(err.Error()))
	}
	if end != info.Size() {
		return nil, fmt.Errorf("MANIFEST: %d bytes after the last complete entry (at %d of %d)", info.Size()-end, end, info.Size())
	}
	for id := range m.Tables {
		if _, ok := onDisk[id]; !ok {
			return nil, fmt.Errorf("MANIFEST names table %s, which is missing", table.IDToFilename(id))
		}
	}
	for id, name := range onDisk {
		if _, ok := m.Tables[id]; !ok {
			unlisted = append(unlisted, name)
		}
	}
	sort.Strings(unlisted)
	return unlisted, nil
}
