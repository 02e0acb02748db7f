package cache

import (
	"testing"
)

// BenchmarkGetWarm is one warm Get of a 32 KiB kernel record (goal: well under 1 ms).
func BenchmarkGetWarm(b *testing.B) {
	s := openT(b, b.TempDir(), &warnings{}, nil)
	defer s.Close()
	const n = 64
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = testKey(b, KindKernel, i)
		if err := s.Put(keys[i], &Record{Name: "k", Target: "sm_90", Payload: testPayload(i, 32<<10)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := s.Get(keys[i%n]); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkGetAfterReopen reads records from a store reopened from disk (sidecar checked,
// tables read from files rather than the memtable).
func BenchmarkGetAfterReopen(b *testing.B) {
	dir := b.TempDir()
	s := openT(b, dir, &warnings{}, nil)
	const n = 64
	for i := 0; i < n; i++ {
		if err := s.Put(testKey(b, KindKernel, i), &Record{Name: "k", Payload: testPayload(i, 32<<10)}); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	s = openT(b, dir, &warnings{}, nil)
	defer s.Close()
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = testKey(b, KindKernel, i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := s.Get(keys[i%n]); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkOpenClose is Open (with the sidecar check) and Close (with the sidecar write) of a
// store holding 64 kernels of 32 KiB.
func BenchmarkOpenClose(b *testing.B) {
	dir := b.TempDir()
	s := openT(b, dir, &warnings{}, nil)
	for i := 0; i < 64; i++ {
		if err := s.Put(testKey(b, KindKernel, i), &Record{Name: "k", Payload: testPayload(i, 32<<10)}); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := openT(b, dir, &warnings{}, nil)
		if s.Mode() != ModeReadWrite {
			b.Fatal(s.Mode())
		}
		s.Close()
	}
}
