// Package templates holds widejit's kernel templates: real Triton kernels (`@triton.jit`,
// `import triton.language as tl`) written as Go text/template files, one family per file,
// embedded with go:embed. lowering/ fills a template with the shapes-independent structure of
// a kernel group (which operands exist, how each is addressed, the fused epilogue as Python
// statements) and gets back a standalone kernel file that widejit's front end, or real Triton,
// compiles.
//
// Families (file -> kernels):
//   - elementwise.py: fused element-wise chains over an N-first index space; also the strided
//     copy used for permute/transpose/cat/stack and for materialising views.
//   - matmul.py: tiled tl.dot matmul with a K loop and masks, batched over models and matmul
//     batches by grid axes, with an element-wise epilogue (linear, matmul).
//   - mlp.py: a whole Linear-act-Linear block in one kernel (the hidden activation never leaves
//     the program).
//   - norm.py: row-wise normalisations (LayerNorm, RMSNorm, GroupNorm, InstanceNorm) with
//     affine parameters and an element-wise epilogue.
//   - reduce.py: softmax/log_softmax along any dim, and sum/mean/amax over a dim run.
//   - embedding.py: row gathers (Embedding).
//   - rnn.py: one direction of one RNN/GRU/LSTM layer, the whole time loop in the kernel.
//
// Every rendered kernel starts with a header comment naming the graph nodes it serves.
// Templates take their data as the `any` passed to Render; lowering/ owns the data types (each
// template documents the fields it reads at its top, in a template comment).
//
// A new family is one more *.py file here; nothing else in this package changes.
package templates
