// Package ir is widejit's tile IR: the typed, specialized form of one kernel that every backend
// consumes (jit/cpu executes it, jit/ptx emits PTX from it).
//
// A Func holds the runtime parameters and a body Block. Values are SSA: each is defined once,
// by an instruction result or a block argument, and has a Type: an element dtype (or a pointer
// to one) and a static shape (empty for scalars). Control flow is structured: For, If and While
// own region blocks that end in Yield (or Condition), and loop-carried values are block
// arguments, as in MLIR's scf dialect.
//
// The specializer (package triton) makes every implicit rule of the language explicit before
// the IR exists: type promotion is a Cast, broadcasting is Splat/Broadcast, block pointers are
// pointer tiles with masks, tl.rand is integer arithmetic. Backends therefore see operands of
// exactly the types each Op documents and never infer anything. Source positions (Pos) ride
// on every instruction so a backend can name the kernel line of a failing access.
//
// The type rules of the ops (ops.go documents them) are stated once, as functions, in
// rules.go: Verify applies them to every instruction (CheckInstr), the backends verify a
// function before compiling it instead of checking types again, and the front end asks the
// dtype questions (Op.TakesDType, DotAccumulator, AtomicTakesDType, CheckCast) there.
package ir
