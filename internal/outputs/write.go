package outputs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/widejit/widejit/internal/errkind"
)

// Write writes a file the user asked for (--out, --export) without ever losing one of
// theirs: a path that is one of the command's inputs (the graph, its weights, --inputs,
// --check, ...) is refused, and the content goes to a temporary file beside it that replaces
// the path only once complete, so a failed or interrupted write leaves the old file as it
// was (and RemoveTemporaries removes the temporary file of an interrupted process). The new
// file gets the permissions of any file the user creates (0666 less the umask).
func Write(flag, path string, inputs []string, write func(w io.Writer) error) error {
	if err := RefuseInput(flag, path, inputs); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return errkind.Usagef("%s %s: not a regular file; refusing to replace it", flag, path)
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := createTemporary(tmp)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	defer forgetTemporary(tmp)
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		if interrupted() {
			err = ErrInterrupted // rather than the rename's "no such file"
		}
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return nil
}

// RefuseInput refuses an output path that names one of the inputs (the same file,
// also through another path or a link).
func RefuseInput(flag, path string, inputs []string) error {
	out, err := os.Stat(path)
	if err != nil {
		return nil // nothing there yet: nothing to lose
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if fi, err := os.Stat(in); err == nil && os.SameFile(out, fi) {
			return errkind.Usagef("%s %s is an input of this command (%s); refusing to overwrite it", flag, path, in)
		}
	}
	return nil
}

// temporaries are the temporary files of the writes in progress.
var temporaries = struct {
	sync.Mutex
	paths       map[string]bool
	interrupted bool
}{paths: map[string]bool{}}

// ErrInterrupted is what Write returns once RemoveTemporaries has run.
var ErrInterrupted = errors.New("interrupted: no file is written any more")

// createTemporary creates tmp and records it, under the lock that RemoveTemporaries takes, so
// that no temporary file is created after it has run.
func createTemporary(tmp string) (*os.File, error) {
	temporaries.Lock()
	defer temporaries.Unlock()
	if temporaries.interrupted {
		return nil, ErrInterrupted
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666) // the umask applies
	if err == nil {
		temporaries.paths[tmp] = true
	}
	return f, err
}

func interrupted() bool {
	temporaries.Lock()
	defer temporaries.Unlock()
	return temporaries.interrupted
}

func forgetTemporary(tmp string) {
	temporaries.Lock()
	delete(temporaries.paths, tmp)
	temporaries.Unlock()
}

// RemoveTemporaries removes the temporary file of every Write in progress and makes every
// later Write fail with ErrInterrupted, for a process interrupted by a signal: a Write in
// progress then fails too (its rename finds no file), leaving the file it would have replaced
// as it was. It returns the paths removed, sorted.
func RemoveTemporaries() []string {
	temporaries.Lock()
	defer temporaries.Unlock()
	temporaries.interrupted = true
	var removed []string
	for tmp := range temporaries.paths {
		if err := os.Remove(tmp); err == nil {
			removed = append(removed, tmp)
		}
		delete(temporaries.paths, tmp)
	}
	sort.Strings(removed)
	return removed
}
