//go:build unix

package cache

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// dirLock is a flock on <dir>/widejit.lock. It lives inside the directory and is never moved
// aside, so its inode is stable for every process that waits on it.
type dirLock struct{ f *os.File }

const lockFileName = "widejit.lock"

// errLockBusy reports that another process holds the directory.
var errLockBusy = errors.New("cache directory is locked by another process")

// acquireLock takes the lock (exclusive or shared), retrying until wait has passed.
func acquireLock(path string, exclusive bool, wait time.Duration) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(wait)
	delay := 5 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return &dirLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, errLockBusy
		}
		time.Sleep(delay)
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// allocatedBytes is the disk space a file really uses (Badger preallocates sparse files).
func allocatedBytes(info os.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}

// acquireReadLock takes a shared lock without creating the lock file (a read-only store never
// writes): os.ErrNotExist when there is none, errLockBusy when a writer holds it past wait.
func acquireReadLock(path string, wait time.Duration) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return &dirLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errLockBusy
			}
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dirWritable reports whether this process may create files in dir (access(2): a read-only
// mount says no even to root; permission bits do not bind root).
func dirWritable(dir string) bool { return writableHook(dir) }

var writableHook = func(dir string) bool { return syscall.Access(dir, 2 /* W_OK */) == nil }
