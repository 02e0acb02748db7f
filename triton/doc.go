// Package triton is the front end of widejit's kernel language, a strict subset of Triton
// (see docs/kernel-language.md): scanner, parser and AST for the Python subset, and the
// specializer that turns a @triton.jit function plus a signature and constexpr values into
// typed tile IR (package triton/ir). Kernel templates live in triton/templates.
package triton
