package syntax

import (
	"os"
	"testing"
)

// BenchmarkParseFile measures front-end latency on the largest tutorial kernel; compile
// latency is budgeted in milliseconds per kernel, and parsing should be a small part of it.
func BenchmarkParseFile(b *testing.B) {
	src, err := os.ReadFile("../testdata/kernels/flash_attention.py")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := ParseFile("flash_attention.py", src); err != nil {
			b.Fatal(err)
		}
	}
}
