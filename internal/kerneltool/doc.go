// Package kerneltool is the work behind the CLI's kernel commands, which reach below the
// public API into the kernel front end and backends: `kernel run` (bind a kernel's
// parameters to tensors and scalars, compile it, launch it once, write the tensors back),
// `kernel ir` (the specialized tile IR) and the PTX of `kernel dump --arch`. Errors in how
// a kernel was invoked are errkind.Usage.
package kerneltool
