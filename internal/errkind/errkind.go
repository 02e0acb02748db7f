package errkind

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Usage marks an error in how the work was asked for (a flag's value, an argument bound to
// the wrong parameter), as opposed to a failure while doing it.
type Usage struct{ Err error }

func (e Usage) Error() string { return e.Err.Error() }
func (e Usage) Unwrap() error { return e.Err }

// Usagef is a Usage error with a formatted message.
func Usagef(format string, args ...any) error { return Usage{Err: fmt.Errorf(format, args...)} }

// Input marks an error in a file the user gave: a graph, weights, inputs, expected outputs.
type Input struct{ Err error }

func (e Input) Error() string { return e.Err.Error() }
func (e Input) Unwrap() error { return e.Err }

// Printable is msg made safe to print on a terminal: every character that is not printable
// text (control characters such as ESC and NUL, carriage returns, bidirectional overrides,
// invalid UTF-8) is escaped as Go writes it in a quoted string (\x1b, \x00, \u202e), so that a
// path or a name taken from a file shows as what it is and cannot move the cursor, clear the
// screen or hide text. Line breaks and tabs, which messages use to lay out lists, stay.
func Printable(msg string) string {
	var b strings.Builder
	for len(msg) > 0 {
		r, size := utf8.DecodeRuneInString(msg)
		switch {
		case r == utf8.RuneError && size == 1: // not UTF-8
			fmt.Fprintf(&b, `\x%02x`, msg[0])
		case r == '\n' || r == '\t' || unicode.IsPrint(r):
			b.WriteString(msg[:size])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		msg = msg[size:]
	}
	return b.String()
}
