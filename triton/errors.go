package triton

import (
	"fmt"

	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

// Error is a specialization error at a kernel position. Consts lists the constexprs in force
// ("BLOCK=1024, DTYPE=fp16") so that one failing specialization among many can be told apart.
type Error struct {
	Pos    ir.Pos
	Msg    string
	Consts string
	// Internal marks a bug in widejit rather than in the kernel (a verifier failure, a panic).
	Internal bool
	// Syntax holds every parse error when the kernel text does not parse (Pos and Msg are the
	// first one's).
	Syntax syntax.ErrorList
}

// Unwrap exposes the parser's error list for a syntax error.
func (e *Error) Unwrap() error {
	if len(e.Syntax) > 0 {
		return e.Syntax
	}
	return nil
}

func (e *Error) Error() string {
	if len(e.Syntax) > 1 {
		return e.Syntax.Error()
	}
	msg := e.Msg
	if e.Internal {
		msg = "internal error: " + msg
	}
	if e.Consts != "" {
		return fmt.Sprintf("%s: %s (constexprs: %s)", e.Pos, msg, e.Consts)
	}
	return fmt.Sprintf("%s: %s", e.Pos, msg)
}

// bailout carries an *Error through panics inside the interpreter; Specialize recovers it.
// Panicking keeps the evaluator free of error plumbing on every expression.
type bailout struct{ err *Error }
