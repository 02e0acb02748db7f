package plugins

import "fmt"

// Kind classifies why a plugin call or load failed.
type Kind string

const (
	KindLoad      Kind = "load"        // unreadable file, not WebAssembly, unsatisfiable imports, init failure
	KindABI       Kind = "abi"         // a missing or mistyped export, or another ABI version
	KindDeadline  Kind = "deadline"    // no answer within the per-call deadline
	KindCanceled  Kind = "canceled"    // the caller's context ended first
	KindMemory    Kind = "memory"      // the guest ran out of its capped memory
	KindPanic     Kind = "panic"       // the guest panicked (message in Reason)
	KindExit      Kind = "exit"        // the guest exited (proc_exit) during a call
	KindTrap      Kind = "trap"        // a WebAssembly trap (unreachable, out-of-bounds access, ...)
	KindMalformed Kind = "malformed"   // the response is not valid JSON of the schema, or lies outside memory
	KindTooLarge  Kind = "output-size" // the response is larger than the read limit
	KindRanking   Kind = "ranking"     // unknown, duplicate or no candidate ids
	KindClosed    Kind = "closed"      // the plugin was closed
	KindRequest   Kind = "request"     // the host could not encode the request (a widejit bug)
)

// Error is every failure of a plugin: which plugin, what kind, and a reason a user can act on.
type Error struct {
	Plugin string // the plugin's name (its file name)
	Kind   Kind
	Reason string
	Err    error // the underlying error, if any
}

func (e *Error) Error() string {
	return fmt.Sprintf("plugin %s: %s: %s", e.Plugin, e.Kind, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }
