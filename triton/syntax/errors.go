package syntax

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one syntax error: a position and a message naming what was wrong or expected.
type Error struct {
	Pos Pos
	Msg string
}

// Error is "FILE:LINE:COL: message".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList collects the errors of one file, like go/scanner.ErrorList.
type ErrorList []*Error

// Add appends an error at pos.
func (l *ErrorList) Add(pos Pos, msg string) { *l = append(*l, &Error{Pos: pos, Msg: msg}) }

// Len, Less and Swap make an ErrorList sortable by position.
func (l ErrorList) Len() int      { return len(l) }
func (l ErrorList) Swap(i, j int) { l[i], l[j] = l[j], l[i] }
func (l ErrorList) Less(i, j int) bool {
	a, b := l[i].Pos, l[j].Pos
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	if a.Col != b.Col {
		return a.Col < b.Col
	}
	return l[i].Msg < l[j].Msg
}

// Sort orders the list by position and drops exact duplicates.
func (l *ErrorList) Sort() {
	sort.Stable(*l)
	out := (*l)[:0]
	for i, e := range *l {
		if i > 0 && *e == *(*l)[i-1] {
			continue
		}
		out = append(out, e)
	}
	*l = out
}

// maxListedErrors bounds the text of Error; the list itself keeps every error.
const maxListedErrors = 10

// Error lists the errors one per line (at most maxListedErrors, then a count of the rest).
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, e := range l {
		if i == maxListedErrors {
			fmt.Fprintf(&b, "\n(and %d more errors)", len(l)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Err returns nil for an empty list, else the list itself as an error.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
