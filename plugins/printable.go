package plugins

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/widejit/widejit/internal/errkind"
)

// MaxNoteBytes caps a plugin's note: longer ones are cut, saying how much was left out.
const MaxNoteBytes = 512

// Printable makes text that a plugin (or any file) supplied safe to print on one line:
// errkind.Printable's escapes (\x1b, \u202e, invalid UTF-8), newlines and tabs as spaces, and
// the result cut after limit bytes of input, saying how many more there were.
func Printable(s string, limit int) string {
	i := 0
	for i < len(s) && i < limit {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	out := errkind.Printable(strings.NewReplacer("\n", " ", "\t", " ").Replace(s[:i]))
	if i < len(s) {
		out += fmt.Sprintf("... (%d more bytes)", len(s)-i)
	}
	return out
}
