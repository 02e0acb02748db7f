package engine

import (
	"bytes"
	"debug/elf"
	"os"
	"runtime/debug"
	"sync"
)

const modulePath = "github.com/widejit/widejit"

// BuildVersion names this build of widejit; the kernel cache keys on it, so two builds that generate
// different code must never share a name. A module version or a clean VCS revision names a
// build exactly. Anything else (a modified tree, a build without VCS stamping such as
// GOFLAGS=-buildvcs=false, a test binary) gets the Go build ID of the executable appended,
// which changes whenever the binary's content does.
var BuildVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if ok && info.Main.Path != modulePath {
		// widejit as a dependency of another program: its module version names it, unless
		// replaced by a local copy (then only the executable's content does)
		for _, d := range info.Deps {
			if d.Path == modulePath && d.Replace == nil && d.Version != "" && d.Version != "(devel)" {
				return d.Version
			}
		}
		ok = false
	}
	if ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	rev, dirty := "", false
	if ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && !dirty {
		return rev
	}
	name := "devel"
	if rev != "" {
		name = rev + "+dirty"
	}
	if id := executableBuildID(); id != "" {
		return name + "+build." + id
	}
	return name
})

// executableBuildID reads the Go build ID note of the running executable (ELF only) and
// returns its content-hash part, shortened; "" when it cannot be read.
func executableBuildID() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil {
		return ""
	}
	note, err := sec.Data()
	// The note is namesz(4) descsz(4) type(4) "Go\x00\x00" then the ID "action/content...".
	if err != nil || len(note) < 16 || !bytes.Equal(note[12:16], []byte("Go\x00\x00")) {
		return ""
	}
	id := string(bytes.TrimRight(note[16:], "\x00"))
	if i := bytes.LastIndexByte([]byte(id), '/'); i >= 0 {
		id = id[i+1:]
	}
	if len(id) > 16 {
		id = id[:16]
	}
	return id
}
