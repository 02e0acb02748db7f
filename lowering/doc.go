// Package lowering turns a graph of one model (package graph), served N times, into a plan of
// wide kernels: every activation is an N-first tensor [N, *per_model_shape], parameters are
// [N, ...], and a shared input is one tensor read with model stride 0.
//
//	plan, err := lowering.Lower(g, lowering.Options{})   // widen, group, choose, render, plan
//	fmt.Print(plan)                                      // readable plan
//	r, err := lowering.NewRunner(plan, dev, compiler, g) // compile every kernel, upload weights
//	outs, err := r.Run(inputs)                           // repeatable; inputs/outputs [N, ...]
//
// How a graph becomes a plan:
//   - Views: flatten, view/reshape, unsqueeze/squeeze, contiguous, identity, eval dropout,
//     chunk/split/getitem, permute/transpose become Views (buffer, offset, per-model strides,
//     model stride) with no kernel. A kernel that needs contiguous rows gets a copy inserted.
//   - Groups: each kernel is a group of graph nodes. Element-wise chains fuse into one kernel;
//     element-wise consumers fuse into their producer's epilogue (linear/matmul, norms);
//     Linear-act-Linear becomes one kernel when one model's weights fit in cache.
//   - Strategies: every group runs `batched` (one launch, the grid covers the N models) or
//     `sequential` (the same kernel launched once per model, with jit.Arg.Offset selecting
//     the model's slice); a merged group is `fused`. A Chooser picks among the candidates
//     (HeuristicChooser is built in; autotune can plug in through the same interface).
//   - Plan: launches in order with their buffers, offsets and scalars; temporary buffers are
//     reused once their last reader has run (liveness).
//
// Primitive families are one file each (elementwise.go, linear.go, norm.go, reduce.go,
// embedding.go, shape.go) and register their ops in the lowerers table (registerOp), so a new
// family is a new file and a new template in triton/templates, without editing the others.
//
// An op with no lowerer is refused with an error naming the node and op; nothing falls back.
package lowering
