// Package syntax owns the first stage of widejit's kernel language: the scanner, the parser and
// the AST of the Python subset that Triton kernels are written in (see
// shared/design/kernel-language.md). It knows nothing of types or of Triton's semantics; the
// specializer (package triton) consumes the AST.
//
// The AST mirrors Python's ast module (Assign, AugAssign, BinOp, Compare, Call, Subscript, ...)
// so that Triton readers recognise it. Every node embeds a Span: Pos() is its first byte, End()
// the position just after its last byte. Columns are 1-based byte columns.
//
// Entry points: ParseFile(path, src) returns a *File or an ErrorList whose entries read
// "FILE:LINE:COL: message"; several errors are reported at once, and after a statement-level
// error the parser resynchronises at the next statement. ParseExpr parses one expression.
// Scan exposes the token stream (INDENT/DEDENT/NEWLINE included). Format prints any node back as
// Python source with minimal parentheses, for error messages and debugging; Inspect walks a tree.
//
// The parser is checked node by node, spans included, against CPython's ast module: the golden
// files (golden/*.ast beside the kernels) are written by testdata/astdump/astdump.py. The
// kernels checked are the tutorial-style Triton kernels in triton/testdata/kernels (vector add,
// softmax, matmul, layer norm, flash attention), shared with the specializer, CPU and PTX
// tests, and this package's testdata/*.py; testdata/parser_constructs.py is syntax coverage only.
//
// What the parser guarantees to its consumer (so the specializer need not re-check):
//   - Constructs outside the subset are rejected here, naming the construct: nested def,
//     lambda, comprehensions and generator expressions, try, with, class, global/nonlocal,
//     *args/**kwargs (in defs and calls), keyword-only/positional-only markers, walrus (:=),
//     async/await, yield, del, raise, dict and set displays, f-strings, imaginary literals,
//     decorators anywhere but on module-level functions, for/else, while/else, imports inside
//     functions, and module-level statements other than imports, defs, plain assignments,
//     docstrings and pass.
//   - Chained comparisons (`a < b < c`) are rejected here: a Compare always has exactly one
//     operator and two operands.
//   - Starred expressions are rejected here; no Starred node reaches a successful parse.
//   - A function's leading docstring is moved to FuncDef.Doc; later string statements remain
//     as ExprStmt (they are comments and evaluate to nothing).
//   - Subscripts and slices are parsed in full generality (x[a:b:c, d]); the specializer
//     rejects all but None and bare `:`.
//   - Module-level imports, `NAME = value` assignments and decorators are recorded as written;
//     deciding what they mean (which names are triton, tl, math, which functions are jit) is the
//     specializer's job.
package syntax
