package widejit_test

import (
	"math"
	"strings"
	"testing"

	"github.com/widejit/widejit"
)

// TestNewFloat32RefusesOverflow: a shape whose element count overflows used to wrap (2^32 x
// 2^32 wraps to 0 and matched empty data); it is refused, and so is one whose bytes would.
func TestNewFloat32RefusesOverflow(t *testing.T) {
	for _, shape := range [][]int{{1 << 32, 1 << 32}, {3, math.MaxInt / 2}, {math.MaxInt / 4, 2}, {1 << 21, 1 << 21, 1 << 21}} {
		if x, err := widejit.NewFloat32(shape, nil); err == nil || !strings.Contains(err.Error(), "more float32 values than memory can") {
			t.Errorf("shape %v: got %v, %v", shape, x, err)
		}
	}
	if x, err := widejit.NewFloat32([]int{0, math.MaxInt}, nil); err != nil || x.Numel() != 0 {
		t.Errorf("an empty shape: %v, %v", x, err)
	}
	if x, err := widejit.NewFloat32([]int{2, 3}, make([]float32, 6)); err != nil || len(x.Data) != 24 {
		t.Errorf("a 2x3 tensor: %v, %v", x, err)
	}
}
