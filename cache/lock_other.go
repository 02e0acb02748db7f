//go:build !unix

package cache

import (
	"errors"
	"os"
	"time"
)

// dirLock on systems without flock only keeps the lock file open; Badger's own directory lock
// is then the only guard against a second writer (its Open error is treated as "busy").
type dirLock struct{ f *os.File }

const lockFileName = "widejit.lock"

var errLockBusy = errors.New("cache directory is locked by another process")

func acquireLock(path string, exclusive bool, wait time.Duration) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// allocatedBytes is the file size where block counts are not available.
func allocatedBytes(info os.FileInfo) int64 { return info.Size() }

func acquireReadLock(path string, wait time.Duration) (*dirLock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &dirLock{f: f}, nil
}

func dirWritable(dir string) bool { return writableHook(dir) }

var writableHook = func(string) bool { return true }
