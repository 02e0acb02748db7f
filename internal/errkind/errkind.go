package errkind

import "fmt"

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
