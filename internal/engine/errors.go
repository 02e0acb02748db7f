package engine

import "fmt"

// UsageError marks an error in how the work was asked for (a flag's value, an argument bound
// to the wrong parameter), as opposed to a failure while doing it: the CLI exits 2 on it.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return UsageError{Err: fmt.Errorf(format, args...)} }

// InputError marks an error in a file the user gave (a graph, weights, inputs, expected
// outputs): the CLI exits 3 on it.
type InputError struct{ Err error }

func (e InputError) Error() string { return e.Err.Error() }
func (e InputError) Unwrap() error { return e.Err }
