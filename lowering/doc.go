// Package lowering turns a graph of one model (package graph), served N times, into a plan of
// wide kernels: every activation is an N-first tensor [N, *per_model_shape], parameters are
// [N, ...], and a shared input is one tensor read with model stride 0.
//
//	plan, err := lowering.Lower(g, lowering.Options{}) // widen, group, choose, render, plan
//	fmt.Print(plan)                                    // readable plan
//	fmt.Print(lowering.Explain(plan))                  // why each group got its strategy
//	plan.Memory()                                      // what running it allocates
//
// Lowering only plans; package runner executes a plan (compiles its kernels, allocates its
// buffers, uploads weights, launches), and imports lowering, never the reverse. (Programs
// use the public API, package widejit, which does all of this.)
//
// How a graph becomes a plan:
//   - Views: flatten, view/reshape, unsqueeze/squeeze, contiguous, identity, eval dropout,
//     chunk/split/getitem, permute/transpose, slice/select (x[:, 0], x[..., a:b:s]) become
//     Views (buffer, offset, per-model strides, model stride) with no kernel. A kernel that
//     needs contiguous rows gets a copy inserted.
//   - Masks and bools: comparisons, logical ops, masked_fill, where and tril/triu are
//     element-wise; bool tensors load as 0.0/1.0 and are stored as i1, so a mask fuses into
//     the epilogue of the kernel producing the scores it masks.
//   - Blocks as ops: mlp_embedder and ada_layer_norm_zero lower through the Linear, MLP and
//     norm lowerings (flux.go), the AdaLN-Zero modulation in the LayerNorm's epilogue.
//   - Groups: each kernel is a group of graph nodes. Element-wise chains fuse into one kernel;
//     element-wise consumers fuse into their producer's epilogue (linear/matmul, norms),
//     also through a permute that reads the producer's output back dense (a transposed
//     Linear's out^T: the Mixer's token-mixing residual add), operands then read permuted;
//     Linear-act-Linear becomes one kernel when one model's weights fit in cache.
//   - Strategies: every group runs `batched` (one launch, the grid covers the N models) or
//     `sequential` (the same kernel launched once per model, with jit.Arg.Offset selecting
//     the model's slice); a merged group is `fused`. A Chooser picks among the candidates
//     (HeuristicChooser is built in; autotune can plug in through the same interface).
//   - Tunables: for the families whose tile sizes matter (matmul, MLP, conv implicit GEMM,
//     element-wise / norm / pool BLOCK) each strategy comes with a few tile-size and
//     num_warps configurations (tunables.go), the emitter's built-in choice first; the
//     group is emitted after its decision, with the chosen tiles and the grid they imply.
//   - Plan: launches in order with their buffers, offsets and scalars; temporary buffers are
//     reused once their last reader has run (liveness). Launches that read parameters only
//     are prepare launches, run once when the runner is built.
//   - CPU plans (Options.Device.Caps.HostThreads) are shaped for the CPU executor, not for warps:
//     dot tiles up to 128 x 256 over K panels of up to 512; when a launch has few programs
//     and enough work for several workers, the tile's activation rows, then its columns, are
//     halved to the split whose programs end first on the cores (spreadOverCores: a
//     simulated schedule with a fixed cost per program, so odd sizes balance); Linear weights transposed once (a prepare launch), rows padded to 64 bytes,
//     so weight tiles are read in place with aligned vector loads (a Linear on a few rows,
//     memory-bound on its weight, keeps it as it is: whole rows in place, jit/cpu's gemv path,
//     linear.go's gemv); convolutions as an implicit
//     GEMM over flat zero-padded pixels (conv_flat.py, in tiles of whole padded rows where
//     rows have dead columns after them and span several tiles, rowTileQ, so that jit/cpu
//     computes the live columns alone; strided ones over stride phase planes,
//     where every tap is again one flat shift; unit-stride pointwise ones over their input as it is; patch embeddings, kernel =
//     stride over few channels, as a patch copy and a pointwise GEMM; dense ones over small
//     maps, at most 64 output pixels a sample, as every sample's tap shifts copied side by
//     side as columns, conv_cols.py, and one GEMM over them, so each weight tile is read once
//     a launch, and so are unit-stride ones over a reduction of at most 32, an image's 3
//     channels x 9 taps, whose dots tap by tap would have a K of 3): tap-major over a [tap, OC, CG] weight when groups have 3 channels or
//     more (the stems too), so both dot operands are read in place, and a convolution feeding another stores its
//     output straight into the next one's zero-padded planes (Buffer.Sparse: only the
//     interior is written, the border keeps the zeros of allocation), so only graph inputs
//     go through a pad kernel (conv_pad.py; a stem's few large planes as [row, column]
//     tiles of each stride phase, a plane a program), whose padded copy a later convolution's
//     epilogue reads its residual from when the widths agree (readPaddedLeaves), and whose
//     stride phases a 1x1 strided convolution of the same input reads (sharePhases); a
//     pointwise convolution feeding a strided one stores its stride phase planes, its
//     pixels run by column residue (takePhasedInput), and one feeding a depthwise one its
//     channel blocks (takeBlockedInput), and one feeding a grouped convolution on a small
//     map its padded planes [channel, sample] so that the samples fold into the grouped
//     convolution's pixels (foldSamples); depthwise
//     convolutions over a copy of their input in zero-padded blocks of channels, channels
//     last (conv_pad.py's Blocks), as per-tap multiply-adds of one contiguous [pixels,
//     channels] tile read in place times a row of the weight relaid once as [tap, channel]
//     (conv_dw_blocks.py; blocks of up to 64 channels, 128 or 256 on the smallest maps),
//     no dot, and so grouped ones with narrow groups on small maps, a
//     lane per group (conv_grouped.py); element-wise kernels with adjacent dims merged where
//     every operand steps through them as one (collapseDims); norms and
//     last-dim reductions a block of rows per program (norm_rows.py, reduce_rows.py); a
//     softmax, log_softmax or LayerNorm over the last dim of a matmul or fused MLP whose
//     programs hold whole rows runs in that kernel after its epilogue (rowops.go's row
//     tails: a classifier's Linear-softmax, a post-norm layer's residual add and
//     LayerNorm; a Mixer's token-mixing LayerNorm after the channel MLP, which then also
//     stores the residual stream it normalises), and a LayerNorm or RMSNorm whose only reader is a Linear taking whole
//     rows in one K tile is applied by the Linear as it loads them (row heads: a pre-norm
//     layer's norms before its feed-forward and its self-attention's QKV projection), unless
//     every program along a wide N would normalise the same rows again (headRepeats); a bool
//     attn_mask becomes an additive -inf/0 mask once. GPU plans keep the GPU-shaped kernels.
//   - An element-wise kernel with a broadcast or strided operand runs by rows: a 2-D tile of
//     whole rows of the last dim whose leading coordinates are computed once per row.
//   - Eval BatchNorm is x * alpha + beta with per-channel alpha and beta (PyTorch's CPU form),
//     and relu a NaN-propagating tl.maximum (propagate_nan=ALL): one pass each over a tile.
//   - CPU pooling: max/avg row by row (pool_rows.py), storing the zero-padded planes of the
//     unit-stride convolution reading it (instead of, or besides, its output: takePooledInput,
//     ResNet's max pool before layer1; instead of it after all when every reader took the
//     padded planes, dropUnreadPoolOutputs), a global average pool as a row mean
//     (reduce_rows.py); a pointwise convolution of 1x1 images as a matmul; a squeeze-excite
//     block (global mean, FC, activation, FC, gate) as one kernel, a program per sample (se.go,
//     se.py), the pool's launch dropped and the FCs' merged into it.
//   - CPU mobile blocks: a squeeze-excite scale x * s (s [B, C, 1, 1]) whose only reader is a
//     pointwise convolution is applied by that convolution to its weight tiles as it loads
//     them (W (x * s) = (W s) x; conv_flat.py Scale), which takes the mul's place in the
//     launch order (channelScaleFor); a cat's parts that pending convolutions produce are
//     stored into their slices by those convolutions (convStoresInto); a channel cat read by
//     a channel shuffle (view [B, G, C/G, H, W], transpose(1, 2)) is laid out shuffled, so
//     the shuffle is a dense view (lowerConcat, shuffleGroups); a pointwise convolution reads
//     a channel slice (a chunk) in place, whatever its sample stride; a convolution whose
//     output has several readers stores, besides it, the zero-padded copy a unit-stride
//     convolution reads (takePaddedCopy), which residual adds then read too.
//   - Other convolutions: conv_rows.py (row tiles) and conv.py (flat pixels) on GPUs;
//     conv_nd.py for Conv3d and transposed convolutions (a gather over the taps that reach
//     each output, stride holes masked, nothing materialized); conv_depthwise.py.
//   - Recurrent layers (rnn.go): per layer and direction one matmul projects every time step
//     for all N models, then one rnn.py launch runs the time loop inside the kernel.
//   - Identities (eval dropout, identity, contiguous, a taken tuple element) pass fusion on,
//     so a residual add after attention or an MLP fuses into the producing kernel.
//   - float16 and bfloat16 data (precision.go): every family takes it, on GPU and CPU plans
//     alike; dots take operands of the data's dtype and accumulate in fp32, everything else
//     computes in fp32 on the loaded values, and values are rounded to the dtype where a
//     kernel stores them and where a dot takes them (the fused MLP's hidden tile, attention's
//     probabilities). --float32-matmul-precision governs fp32 dots only.
//
// Primitive families are one file each (elementwise.go, linear.go, norm.go, reduce.go,
// embedding.go, shape.go, expand.go, pad.go, conv.go, conv_nd.go, pool.go, attention.go, rnn.go,
// flux.go) and
// register their ops in the lowerers table (registerOp), so a new family is a new file and a
// new template in triton/templates, without editing the others.
//
// An op with no lowerer is refused with an error naming the node and op; nothing falls back.
//
// # Adding a family
//
// A family file registers its ops in init (registerOp(fn, "conv2d", ...)). Its lowerFunc reads
// operands with l.input(n, i) / l.value(op) (Views; l.contiguous(v, n) when it needs dense
// rows), allocates its output with l.newOutput(name, shape, dtype), and adds a group with
// l.addGroup(g, n.Name). A group embeds groupBase and implements emit(l) (*Launch, error):
// render its template (templates.Render) and return the kernel (newKernel), the grid for all
// N models, the grid axis that walks the models (ModelAxis) and the arguments in the kernel's
// parameter order (ptrArgs, intArg; every pointer carries its per-model stride so the
// sequential strategy can offset it). Setting groupBase.epi (an epilogue with one index
// expression and mask per axis of the output) lets following element-wise nodes fuse into
// the kernel; epilogue.render gives the loads, arguments and statements (from `acc` to `y`).
//
// # Testing
//
// Tests compare plans with PyTorch fixtures (testdata/fixtures, regenerated by
// testdata/make_fixtures.py with exporters/torch/export.py; testdata/idioms, PyTorch code as
// people write it, by testdata/make_idiom_fixtures.py) through the real CPU pipeline,
// and replay them in testdata/run_plan.py, an independent numpy executor of the dumped
// kernels (skipped with -short).
package lowering
