package openblas

import "testing"

// A core type detected below the CPU's features is replaced, one at or above them is kept.
func TestCoreChoice(t *testing.T) {
	for _, c := range []struct {
		avx512, bf16, avx2 bool
		detected, want     string
		replace            bool
	}{
		{true, true, true, "Prescott", "Cooperlake", true}, // Emerald Rapids under OpenBLAS 0.3.21
		{true, false, true, "Haswell", "SkylakeX", true},
		{true, true, true, "Cooperlake", "Cooperlake", false},
		{true, true, true, "SapphireRapids", "Cooperlake", false},
		{false, false, true, "Zen", "Haswell", false},
		{false, false, true, "Nehalem", "Haswell", true},
		{false, false, false, "Prescott", "", false},
	} {
		want := CoreFor(c.avx512, c.bf16, c.avx2)
		replace := Rank(c.detected) < Rank(want)
		if want != c.want || replace != c.replace {
			t.Errorf("features %v/%v/%v, detected %s: want %q replace %v, got %q %v", c.avx512, c.bf16, c.avx2, c.detected, c.want, c.replace, want, replace)
		}
	}
	if _, ok := Override(""); ok {
		t.Error("Override of no OpenBLAS at all")
	}
	if core, ok := Override("Prescott"); ok != (Rank(ThisCPU()) > 0) || ok && core != ThisCPU() {
		t.Errorf("Override(Prescott) = %q, %v on a CPU that allows %q", core, ok, ThisCPU())
	}
}
