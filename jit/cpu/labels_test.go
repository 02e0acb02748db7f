package cpu

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/widejit/widejit/jit"
)

// With ProfileLabels on, a CPU profile's samples in a kernel's programs carry the label
// kernel=NAME (the profile's string table then holds the key and the kernel's name, which no
// Go symbol spells); with it off, they carry none.
func TestProfileLabelsNameTheKernel(t *testing.T) {
	for _, on := range []bool{true, false} {
		f := dotKernel(1, 128, 128, 128)
		f.Name = "labelled_dot_kernel"
		a, err := Target{}.Codegen(f, jit.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := NewDevice(2).Load(a)
		if err != nil {
			t.Fatal(err)
		}
		bufs := []jit.Arg{buf(f32Buf(t, make([]float32, 128*128))), buf(f32Buf(t, make([]float32, 128*128))), buf(f32Buf(t, make([]float32, 128*128)))}
		var out bytes.Buffer
		if err := pprof.StartCPUProfile(&out); err != nil {
			t.Skipf("a CPU profile is already running (go test -cpuprofile?): %v", err)
		}
		ProfileLabels(on)
		for until := time.Now().Add(300 * time.Millisecond); time.Now().Before(until); {
			if err := k.Launch([3]int{4, 1, 1}, bufs); err != nil {
				ProfileLabels(false)
				pprof.StopCPUProfile()
				t.Fatal(err)
			}
		}
		ProfileLabels(false)
		pprof.StopCPUProfile()
		zr, err := gzip.NewReader(&out)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(raw, []byte(f.Name)); got != on {
			t.Errorf("labels on = %v: the profile names the kernel %v, want %v", on, got, on)
		}
	}
}
