package plugins

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNoteBytes caps a plugin's note: longer ones are cut, saying how much was left out.
const MaxNoteBytes = 512

// Printable makes text that a plugin (or any file) supplied safe to print: control
// characters (ANSI/OSC escape sequences, carriage returns, bidi overrides), invalid UTF-8 and
// other non-printing runes are shown escaped (\x1b, \u202e), newlines and tabs as spaces, and
// the result is cut after limit bytes of input, saying how many more there were.
func Printable(s string, limit int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if i >= limit {
			fmt.Fprintf(&b, "... (%d more bytes)", len(s)-i)
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteByte(' ')
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
