package plugins

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// uleb128 appends v in unsigned LEB128.
func uleb128(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func section(id byte, body []byte) []byte {
	return append(uleb128([]byte{id}, uint64(len(body))), body...)
}

// nestedBlocksModule is a valid module with one function () -> () whose body is depth
// nested empty blocks: small on disk (2 bytes a level) and very slow to compile (issue 14:
// 1.2 MB of it stalled plugin loading for minutes).
func nestedBlocksModule(depth int) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, []byte{1, 0x60, 0, 0})...) // one type: () -> ()
	m = append(m, section(3, []byte{1, 0})...)          // one function of type 0
	code := []byte{0}                                   // no locals
	code = append(code, bytes.Repeat([]byte{0x02, 0x40}, depth)...)
	code = append(code, bytes.Repeat([]byte{0x0b}, depth)...)
	code = append(code, 0x0b)
	body := uleb128(nil, uint64(len(code)))
	body = append(body, code...)
	m = append(m, section(10, append([]byte{1}, body...))...)
	return m
}

// TestCompileTimeBound: a valid module that takes minutes to compile (nested blocks) is set
// aside after Options.CompileTimeout with a KindCompile error, instead of stalling the load.
func TestCompileTimeBound(t *testing.T) {
	// ~60 KB, seconds to compile (100k levels take minutes; kept smaller so the abandoned
	// compile does not slow the rest of the tests for long).
	wasm := nestedBlocksModule(20000)
	start := time.Now()
	opts := testOptions()
	opts.CacheDir = ""
	opts.CompileTimeout = 100 * time.Millisecond
	p, err := LoadBytes(context.Background(), "nested.wasm", wasm, opts)
	if p != nil {
		p.Close(context.Background())
	}
	var perr *Error
	if !errors.As(err, &perr) || perr.Kind != KindCompile || !strings.Contains(perr.Reason, "took longer than 100ms") {
		t.Fatalf("got %v, want a compile-time error", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("the load took %v: the compile was not abandoned", d)
	}
}

// TestModuleSizeBound: a module over Options.MaxModuleBytes, and a FIFO given as a module,
// are refused without reading them.
func TestModuleSizeBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.wasm")
	if err := os.WriteFile(big, nestedBlocksModule(1000), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.MaxModuleBytes = 1000
	_, err := Load(context.Background(), big, opts)
	var perr *Error
	if !errors.As(err, &perr) || perr.Kind != KindLoad || !strings.Contains(perr.Reason, "more than the 1000-byte limit") {
		t.Fatalf("big module: got %v", err)
	}
	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(context.Background(), fifo, testOptions())
	if !errors.As(err, &perr) || !strings.Contains(perr.Reason, "not a regular file") {
		t.Fatalf("fifo: got %v", err)
	}
}

// TestCorruptCompilationCacheIsRebuilt: every entry of the compilation cache overwritten
// with garbage (or truncated) is detected, cleared with a warning and recompiled; the plugin
// keeps working, and a cache dir that cannot be used at all is skipped with a warning.
func TestCorruptCompilationCacheIsRebuilt(t *testing.T) {
	needPlugins(t)
	for _, damage := range []string{"garbage", "truncated", "bit flip"} {
		t.Run(damage, func(t *testing.T) {
			opts := testOptions()
			opts.CacheDir = t.TempDir()
			p := load(t, hostileWasm, opts) // fills the cache
			p.Close(context.Background())
			entries := 0
			filepath.WalkDir(opts.CacheDir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, _ := os.ReadFile(path)
				switch damage {
				case "garbage":
					data = []byte("this is not a compiled module at all")
				case "truncated":
					data = data[:len(data)/2]
				default:
					data[len(data)/2] ^= 0xff
				}
				entries++
				return os.WriteFile(path, data, 0o644)
			})
			if entries == 0 {
				t.Fatal("the compilation cache is empty")
			}
			var warnings []string
			opts.Warn = func(msg string) { warnings = append(warnings, msg) }
			for i := range 2 {
				p := load(t, hostileWasm, opts)
				if _, err := p.Choose(context.Background(), sampleRequest("ok")); err != nil {
					t.Fatalf("load %d after the damage: %v", i, err)
				}
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "is corrupt") {
				t.Fatalf("warnings %q, want one about the corrupt cache", warnings)
			}
		})
	}
	opts := testOptions()
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	opts.CacheDir = file
	var warnings []string
	opts.Warn = func(msg string) { warnings = append(warnings, msg) }
	load(t, hostileWasm, opts)
	if len(warnings) != 1 || !strings.Contains(warnings[0], "unusable") {
		t.Fatalf("warnings %q, want one about the unusable cache", warnings)
	}
}
