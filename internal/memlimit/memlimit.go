// Package memlimit sizes what widejit is about to allocate against a memory limit, so that a
// huge but valid size (a graph run with n = 10^8) is refused with the figures instead of
// ending in the Go runtime's "fatal error: runtime: out of memory".
package memlimit

import (
	"bufio"
	"fmt"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"sync"
)

// DefaultFraction is the share of physical memory the default limit allows.
const DefaultFraction = 0.8

// fallbackLimit is the default when physical memory cannot be read (no /proc/meminfo).
const fallbackLimit = 16 << 30

var (
	physOnce sync.Once
	phys     uint64
)

// Physical is the machine's memory in bytes (MemTotal of /proc/meminfo), or 0 if unknown.
func Physical() uint64 {
	physOnce.Do(func() { phys = readMemTotal("/proc/meminfo") })
	return phys
}

func readMemTotal(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil || kb > math.MaxUint64/1024 {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// Default is DefaultFraction of physical memory, or 16 GiB when that is unknown.
func Default() int64 {
	if p := Physical(); p > 0 {
		return int64(float64(p) * DefaultFraction)
	}
	return fallbackLimit
}

// Resolve turns an option value into a limit: 0 means Default(), negative means none.
func Resolve(limit int64) int64 {
	switch {
	case limit == 0:
		return Default()
	case limit < 0:
		return math.MaxInt64
	}
	return limit
}

// Tally adds up byte counts without overflowing: past 2^63-1 it saturates.
type Tally struct{ n uint64 }

// Add counts elems elements of size bytes each (negative counts are treated as zero).
func (t *Tally) Add(elems, size int64) {
	if elems <= 0 || size <= 0 {
		return
	}
	hi, lo := bits.Mul64(uint64(elems), uint64(size))
	sum, carry := bits.Add64(t.n, lo, 0)
	if hi != 0 || carry != 0 || sum > math.MaxInt64 {
		t.n = math.MaxInt64
		return
	}
	t.n = sum
}

// Product multiplies non-negative factors, saturating at math.MaxInt64 (an element count
// from a shape and a model count, which may overflow int).
func Product(factors ...int) int64 {
	p := uint64(1)
	for _, f := range factors {
		if f <= 0 {
			return 0
		}
		hi, lo := bits.Mul64(p, uint64(f))
		if hi != 0 || lo > math.MaxInt64 {
			return math.MaxInt64
		}
		p = lo
	}
	return int64(p)
}

// Bytes is the total (math.MaxInt64 when it overflowed).
func (t Tally) Bytes() int64 { return int64(t.n) }

// Error is a refusal: what needed how much, against which limit.
type Error struct {
	What  string
	Need  int64
	Limit int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s needs %s of memory, more than the limit of %s (set a higher memory limit if the machine has it)",
		e.What, Format(e.Need), Format(e.Limit))
}

// Check returns an *Error when need exceeds limit (as given to Resolve).
func Check(what string, need, limit int64) error {
	if l := Resolve(limit); need > l {
		return &Error{What: what, Need: need, Limit: l}
	}
	return nil
}

// Format prints a byte count with a binary unit ("1.5 GiB"); saturated counts read "over 8 EiB".
func Format(n int64) string {
	if n == math.MaxInt64 {
		return "over 8 EiB"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s (%d bytes)", v, units[u], n)
}
