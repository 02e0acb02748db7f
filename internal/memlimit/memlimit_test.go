package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTallySaturates(t *testing.T) {
	var tl Tally
	tl.Add(1<<40, 8)
	if tl.Bytes() != 8<<40 {
		t.Fatalf("got %d", tl.Bytes())
	}
	tl.Add(math.MaxInt64, 4)
	if tl.Bytes() != math.MaxInt64 {
		t.Fatalf("overflow not saturated: %d", tl.Bytes())
	}
	err := Check("plan", tl.Bytes(), 1<<30)
	if err == nil || !strings.Contains(err.Error(), "plan needs over 8 EiB") || !strings.Contains(err.Error(), "1.0 GiB") {
		t.Fatalf("got %v", err)
	}
	if Check("plan", 1<<20, -1) != nil || Check("plan", 1<<20, 1<<30) != nil {
		t.Fatal("a small need was refused")
	}
}

func TestMemTotal(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemFree: 10 kB\nMemTotal:       16384 kB\n"), 0o644)
	if got := readMemTotal(p); got != 16384*1024 {
		t.Fatalf("got %d", got)
	}
	if readMemTotal(filepath.Join(t.TempDir(), "none")) != 0 {
		t.Fatal("a missing file gave a size")
	}
	if Default() <= 0 {
		t.Fatal("no default limit")
	}
}
