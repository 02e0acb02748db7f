package cudatest

import (
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/cuda/internal/streamtest"
	"github.com/widejit/widejit/triton/ir"
)

// stubWithAdd opens a stub device whose launches run on the CPU backend, and loads the
// tutorial's add_kernel (out = x + y over n fp32 values) on it.
func stubWithAdd(t *testing.T, cfg StubConfig) (*Stub, *cuda.Device, jit.Kernel) {
	t.Helper()
	if cfg.Host == nil {
		cfg.Host = cpu.NewDevice(1)
	}
	s := NewStub(cfg)
	d, err := s.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return s, d, streamtest.LoadAdd(t, d)
}

// twoStreams is stubWithAdd with two streams of the device.
func twoStreams(t *testing.T, cfg StubConfig) (*Stub, *cuda.Device, jit.Kernel, jit.Stream, jit.Stream) {
	t.Helper()
	stub, d, k := stubWithAdd(t, cfg)
	return stub, d, k, streamtest.NewStream(t, d), streamtest.NewStream(t, d)
}

// The stub runs queued work only when the host synchronises: a download's bytes are there
// after Sync, not before; the launch ran on the CPU backend; the synchronous path still works.
func TestStubRunsQueuedWorkAtSync(t *testing.T) {
	stub, d, k := stubWithAdd(t, StubConfig{})
	s := streamtest.NewStream(t, d)
	x, _ := d.Alloc(ir.F32, 4)
	out, _ := d.Alloc(ir.F32, 4)
	in := streamtest.Pinned(t, d, streamtest.F32s(1, 2, 3, 4))
	res := streamtest.Pinned(t, d, make([]byte, 16))
	if err := s.Upload(x, 0, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(k, [3]int{1, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(4)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Download(out, 0, res); err != nil {
		t.Fatal(err)
	}
	if got := streamtest.ReadF32s(res); got[0] != 0 {
		t.Fatalf("the download ran before any synchronisation: %v", got)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := streamtest.ReadF32s(res); got[0] != 2 || got[3] != 8 {
		t.Fatalf("after Sync: %v, want 2x the input", got)
	}
	ops := stub.Ops()
	var kinds []string
	for _, op := range ops {
		if op.Stream == laneOf(s) || op.Kind == "sync" {
			kinds = append(kinds, op.Kind)
			if op.Kind != "sync" && (op.Ran < 0 || !op.Pinned && op.Kind != "launch") {
				t.Errorf("op %+v: not run, or a copy from pageable memory", op)
			}
		}
	}
	if strings.Join(kinds, " ") != "upload launch download sync" {
		t.Errorf("the stream's operations: %v", kinds)
	}
	// the synchronous path (the device's own stream, blocking copies) runs through the stub too
	host := make([]byte, 16)
	if err := d.Upload(x, streamtest.F32s(5, 6, 7, 8)); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch([3]int{1, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(4)}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Download(out, host); err != nil {
		t.Fatal(err)
	}
	if got := streamtest.ReadF32s(host); got[0] != 10 || got[3] != 16 {
		t.Errorf("synchronous path: %v", got)
	}
	if f := stub.Failures(); len(f) != 0 {
		t.Errorf("failures: %v", f)
	}
}

// A launch that reads what another stream's upload writes, with no event between them, is
// an error in the stub; with an event it is fine, and the event is what orders them.
func TestStubRefusesUnorderedAccess(t *testing.T) {
	stub, d, k, s1, s2 := twoStreams(t, StubConfig{})
	x, _ := d.Alloc(ir.F32, 4)
	out, _ := d.Alloc(ir.F32, 4)
	in := streamtest.Pinned(t, d, streamtest.F32s(1, 2, 3, 4))
	args := []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(4)}}
	if err := s1.Upload(x, 0, in); err != nil {
		t.Fatal(err)
	}
	err := s2.Launch(k, [3]int{1, 1, 1}, args)
	if err == nil || !strings.Contains(err.Error(), "STUB_UNORDERED_ACCESS") || !strings.Contains(err.Error(), "launch of add_kernel") ||
		!strings.Contains(err.Error(), "upload (16 bytes)") {
		t.Fatalf("unordered launch after an upload on another stream: %v", err)
	}
	if err := d.Sync(); err != nil { // the upload ran; the refused launch was never queued
		t.Fatal(err)
	}

	e := streamtest.NewEvent(t, d, false)
	if err := s1.Upload(x, 2, in[:8]); err != nil {
		t.Fatal(err)
	}
	if err := s1.Record(e); err != nil {
		t.Fatal(err)
	}
	if err := s2.Wait(e); err != nil {
		t.Fatal(err)
	}
	if err := s2.Launch(k, [3]int{1, 1, 1}, args); err != nil {
		t.Fatalf("launch ordered by an event: %v", err)
	}
	ops := stub.Ops()
	upload, launch := -1, -1
	for _, op := range ops {
		switch {
		case op.Kind == "upload" && op.Bytes == 8:
			upload = op.Seq
		case op.Kind == "launch" && op.Stream == laneOf(s2):
			launch = op.Seq
		}
	}
	if upload < 0 || launch < 0 || !stub.HappensBefore(upload, launch) || stub.HappensBefore(launch, upload) {
		t.Fatalf("the event does not order upload %d before launch %d", upload, launch)
	}

	// a download on s1 of what s2's launch writes, unordered: refused when issued
	res := streamtest.Pinned(t, d, make([]byte, 16))
	if err := s1.Download(out, 0, res); err == nil || !strings.Contains(err.Error(), "download (16 bytes)") {
		t.Errorf("download racing a launch: %v", err)
	}
	// two downloads into the same pinned bytes from two streams: refused
	z, _ := d.Alloc(ir.F32, 4)
	if err := s2.Download(z, 0, res); err != nil {
		t.Fatal(err)
	}
	if err := s1.Download(z, 0, res); err == nil || !strings.Contains(err.Error(), "host memory") {
		t.Errorf("two unordered downloads into the same host bytes: %v", err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Download(out, res); err != nil {
		t.Fatal(err)
	}
	if got := streamtest.ReadF32s(res); got[0] != 2 || got[2] != 2 || got[3] != 4 {
		t.Errorf("out = x + x after the second upload: %v", got)
	}
	if len(stub.Failures()) != 3 {
		t.Errorf("failures: %q", stub.Failures())
	}
}

// laneOf is the stub's number for stream s, as in StubOp.Stream.
func laneOf(s jit.Stream) int { return int(s.(*cuda.Stream).Handle()) - 0x5000 }

// What a launch writes is checked once it has run: another stream's unordered launch that
// points into it fails the synchronisation that runs them.
func TestStubChecksWhatLaunchesWrite(t *testing.T) {
	_, d, k, s1, s2 := twoStreams(t, StubConfig{})
	x, _ := d.Alloc(ir.F32, 8)
	out, _ := d.Alloc(ir.F32, 8)
	if err := d.Upload(x, streamtest.F32s(1, 2, 3, 4, 5, 6, 7, 8)); err != nil {
		t.Fatal(err)
	}
	// s1 writes out[0:8]; s2 reads x and writes out[4:8] too: the pointers differ, so only
	// running them shows that they overlap
	if err := s1.Launch(k, [3]int{1, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(8)}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Launch(k, [3]int{1, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out, Offset: 4}, {Scalar: int64(1)}}); err != nil {
		t.Fatal(err)
	}
	err := d.Sync()
	if err == nil || !strings.Contains(err.Error(), "STUB_UNORDERED_ACCESS") || strings.Count(err.Error(), "launch of add_kernel") != 2 {
		t.Fatalf("two unordered launches writing the same bytes: %v", err)
	}
	// disjoint halves are fine (on a new stub: the failed work above stays queued)
	_, d, k, s1, s2 = twoStreams(t, StubConfig{})
	x, _ = d.Alloc(ir.F32, 8)
	out, _ = d.Alloc(ir.F32, 8)
	if err := d.Upload(x, streamtest.F32s(1, 2, 3, 4, 5, 6, 7, 8)); err != nil {
		t.Fatal(err)
	}
	if err := s1.Launch(k, [3]int{1, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(4)}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Launch(k, [3]int{1, 1, 1}, []jit.Arg{{Buf: x, Offset: 4}, {Buf: x, Offset: 4}, {Buf: out, Offset: 4}, {Scalar: int64(4)}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("disjoint launches: %v", err)
	}
	host := make([]byte, 32)
	if err := d.Download(out, host); err != nil {
		t.Fatal(err)
	}
	if got := streamtest.ReadF32s(host); got[0] != 2 || got[7] != 16 {
		t.Errorf("out = %v, want 2x", got)
	}
}

// The stub's clock: one stream's upload overlaps another's kernel; event times come from it.
func TestStubClockAndEventTimes(t *testing.T) {
	stub, d, k, s1, s2 := twoStreams(t, StubConfig{})
	x, _ := d.Alloc(ir.F32, 1024)
	y, _ := d.Alloc(ir.F32, 1024)
	out, _ := d.Alloc(ir.F32, 1024)
	in := streamtest.Pinned(t, d, make([]byte, 4096))
	start, end := streamtest.NewEvent(t, d, true), streamtest.NewEvent(t, d, true)
	if err := s1.Record(start); err != nil {
		t.Fatal(err)
	}
	if err := s1.Launch(k, [3]int{16, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(1024)}}); err != nil {
		t.Fatal(err)
	}
	if err := s1.Record(end); err != nil {
		t.Fatal(err)
	}
	if err := s2.Upload(y, 0, in); err != nil {
		t.Fatal(err)
	}
	if _, err := end.Since(start); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_READY") {
		t.Errorf("time of events that have not run: %v", err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	dt, err := end.Since(start)
	if want := 5*time.Microsecond + 16; err != nil || dt != want {
		t.Errorf("launch time %v, %v; want %v", dt, err, want)
	}
	var launch, upload StubOp
	for _, op := range stub.Ops() {
		switch op.Kind {
		case "launch":
			launch = op
		case "upload":
			if op.Bytes == 4096 {
				upload = op
			}
		}
	}
	if upload.End != 2*time.Microsecond+256 || !(upload.Start < launch.End && launch.Start < upload.End) {
		t.Errorf("upload %v..%v does not overlap launch %v..%v", upload.Start, upload.End, launch.Start, launch.End)
	}
	if stub.HappensBefore(upload.Seq, launch.Seq) || stub.HappensBefore(launch.Seq, upload.Seq) {
		t.Error("the upload and the launch of two streams are ordered")
	}
}

// LastStreamFirst runs the later stream first where nothing orders them; an event still
// holds it back.
func TestStubOrders(t *testing.T) {
	for _, order := range []StubOrder{RoundRobin, LastStreamFirst, Random} {
		stub, d, k, s1, s2 := twoStreams(t, StubConfig{Order: order, Seed: 3})
		x, _ := d.Alloc(ir.F32, 4)
		out, _ := d.Alloc(ir.F32, 4)
		in := streamtest.Pinned(t, d, streamtest.F32s(1, 2, 3, 4))
		res := streamtest.Pinned(t, d, make([]byte, 16))
		e := streamtest.NewEvent(t, d, false)
		for _, step := range []func() error{
			func() error { return s1.Upload(x, 0, in) },
			func() error { return s1.Record(e) },
			func() error { return s2.Wait(e) },
			func() error {
				return s2.Launch(k, [3]int{1, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(4)}})
			},
			func() error { return s2.Download(out, 0, res) },
			s2.Sync,
		} {
			if err := step(); err != nil {
				t.Fatalf("order %d: %v", order, err)
			}
		}
		if got := streamtest.ReadF32s(res); got[1] != 4 {
			t.Errorf("order %d: %v", order, got)
		}
		ran := map[string]int{}
		for _, op := range stub.Ops() {
			ran[op.Kind] = op.Ran
		}
		if !(ran["upload"] < ran["record"] && ran["record"] < ran["wait"] && ran["wait"] < ran["launch"]) {
			t.Errorf("order %d ran %v", order, ran)
		}
	}
}

// A cc 9.0 device opened with arch=sm_90a generates and loads PTX ISA 8.0 for sm_90a (the
// wgmma target), and runs it; it is the default unless the driver predates CUDA 12; a device
// of another capability refuses the option by name.
func TestStubHopperArch(t *testing.T) {
	stub, d, k := stubWithAdd(t, StubConfig{Options: cuda.Options{Arch: "sm_90a"}})
	if key := d.Target().Key(); key != "ptx8.0/sm_90a+stub" || !d.Info().Caps.WarpgroupMMA {
		t.Fatalf("target %s, capabilities %+v: want ptx8.0/sm_90a+stub with warpgroup MMA", key, d.Info().Caps)
	}
	x, _ := d.Alloc(ir.F32, 4)
	out, _ := d.Alloc(ir.F32, 4)
	if err := d.Upload(x, streamtest.F32s(1, 2, 3, 4)); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch([3]int{1, 1, 1}, []jit.Arg{{Buf: x}, {Buf: x}, {Buf: out}, {Scalar: int64(4)}}); err != nil {
		t.Fatal(err)
	}
	host := make([]byte, 16)
	if err := d.Download(out, host); err != nil {
		t.Fatal(err)
	}
	if got := streamtest.ReadF32s(host); got[0] != 2 || got[3] != 8 {
		t.Errorf("sm_90a launch: %v, want 2x the input", got)
	}
	stub.mu.Lock()
	for text := range stub.kernels {
		if !strings.Contains(text, ".version 8.0\n.target sm_90a\n") {
			t.Errorf("loaded PTX is not ISA 8.0 for sm_90a:\n%.200s", text)
		}
	}
	stub.mu.Unlock()

	for _, c := range []struct {
		cfg  StubConfig
		want string
	}{
		{StubConfig{}, "ptx8.0/sm_90a+stub"},                                              // the default, checked on an H100
		{StubConfig{CUDAVersion: 11080}, "ptx7.8/sm_90+stub"},                             // a CUDA 11 driver cannot JIT ISA 8.0
		{StubConfig{Options: cuda.Options{Arch: "sm_90"}}, "ptx7.8/sm_90+stub"},           // asked for
		{StubConfig{Capability: [2]int32{8, 6}, CUDAVersion: 11080}, "ptx7.8/sm_80+stub"}, // Ampere
	} {
		d, err := NewStub(c.cfg).Open(0)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		if key := d.Target().Key(); key != c.want || d.Info().Caps.WarpgroupMMA != strings.Contains(c.want, "sm_90a") {
			t.Errorf("%+v: target %s (warpgroup MMA %v), want %s", c.cfg, key, d.Info().Caps.WarpgroupMMA, c.want)
		}
	}
	_, err := NewStub(StubConfig{Capability: [2]int32{8, 9}, Options: cuda.Options{Arch: "sm_90a"}}).Open(0)
	if err == nil || !strings.Contains(err.Error(), "cuda: device 0 (widejit stub GPU) with arch=sm_90a: ptx: arch sm_90a (wgmma, Hopper only) needs a compute capability 9.0 device; this one is 8.9") {
		t.Fatalf("sm_90a on a cc 8.9 device: %v", err)
	}
}
