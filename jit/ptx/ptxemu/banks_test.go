package ptxemu

import "testing"

// Conflict degrees computed by hand: 32 banks of 4-byte words, 16-byte rows over 4 banks.
func TestConflictDegree(t *testing.T) {
	rows := func(stride uint64) []uint64 {
		var a []uint64
		for r := range uint64(8) {
			a = append(a, r*stride)
		}
		return a
	}
	for _, tc := range []struct {
		name  string
		addrs []uint64
		width int
		want  int
	}{
		{"8 rows 16 bytes apart: 128 bytes, every bank once", rows(16), 16, 1},
		{"8 rows 64 bytes apart: banks 0-3 and 16-19, four rows each", rows(64), 16, 4},
		{"8 rows 128 bytes apart: banks 0-3, all eight rows", rows(128), 16, 8},
		{"8 rows 32 bytes apart: 256 bytes, two rows per bank", rows(32), 16, 2},
		{"one row read by every lane: a broadcast", make([]uint64, 8), 16, 1},
		{"words 0 and 32: the same bank", []uint64{0, 128}, 4, 2},
		{"words 0 and 1: two banks", []uint64{0, 4}, 4, 1},
		{"two halves of word 0", []uint64{0, 2}, 2, 1},
		{"halves of words 0 and 32", []uint64{2, 130}, 2, 2},
		{"rows 64 bytes apart, the 16-byte chunk XORed with (row/2)%4", []uint64{0, 64, 128 + 16, 192 + 16, 256 + 32, 320 + 32, 384 + 48, 448 + 48}, 16, 1},
	} {
		if got := ConflictDegree(tc.addrs, tc.width); got != tc.want {
			t.Errorf("%s: degree %d, want %d", tc.name, got, tc.want)
		}
	}
}
