// Package triton is the front end of widejit's kernel language, a strict subset of Triton
// (see docs/kernel-language.md). The scanner, parser and AST live in triton/syntax and the
// tile IR in triton/ir; this package owns the specializer: Specialize turns a @triton.jit
// function plus a signature and constexpr values into typed, verified tile IR.
//
// The specializer is an abstract interpreter over the AST. Values are either compile-time
// Python values (ints, floats, bools, strings, None, dtypes, tuples, modules, jit functions,
// block pointers as records of IR scalars) or IR values (scalars and tiles). Compile-time
// code (static if, tl.static_range, helper calls, constexpr arithmetic) runs in Go and leaves
// no trace; everything else emits IR with every implicit rule of the language made explicit
// (promotion, weak scalars, broadcasting, implicit store casts, block-pointer addressing).
//
// Files: specialize.go (entry, parse cache, parameter binding), interp.go (statements, if,
// loops, loop-carried values), expr.go (expressions, Python semantics of constants), calls.go
// (calls, Python builtins, helper inlining), attrs.go (attributes, tl namespace), builder.go
// (casts, broadcasting, Triton's binary-op typing), types.go (promotion tables), tl.go,
// memory.go, reduce.go (tl.* functions), prelude.go (tl functions that Triton writes in
// Triton: Philox random numbers, softmax, xor_sum), errors.go (the positioned Error type).
// Kernel templates live in triton/templates.
package triton
