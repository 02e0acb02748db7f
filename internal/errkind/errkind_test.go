package errkind

import "testing"

// TestPrintable: what a terminal would act on is escaped; text, line breaks and tabs stay.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"weights /tmp/a b/w.safetensors: not found": "weights /tmp/a b/w.safetensors: not found",
		"x\x1b[2J\x1b]0;title\x07y":                 `x\x1b[2J\x1b]0;title\ay`,
		"nul\x00 and cr\r and del\x7f":              `nul\x00 and cr\r and del\x7f`,
		"bidi \u202eexe.txt, C1 \u009b":             `bidi \u202eexe.txt, C1 \u009b`,
		"bad utf-8 \xff\xfe, ünïcödé, 模型":           `bad utf-8 \xff\xfe, ünïcödé, 模型`,
		"problems:\n\tone\n\ttwo":                   "problems:\n\tone\n\ttwo",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
