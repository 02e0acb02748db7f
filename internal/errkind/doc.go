// Package errkind marks what an error is the fault of, so the code doing the work can say
// and the CLI can turn it into its exit code: Usage (how the work was asked for: exit 2) or
// Input (a file the user gave: exit 3); anything else is a failure of the work (exit 1).
// Printable makes an error's text safe to print: the one place where paths and names quoted
// from files are escaped before they reach a terminal.
// It is a leaf, so any package may mark its errors.
package errkind
