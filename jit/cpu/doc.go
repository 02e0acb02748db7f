// Package cpu is widejit's CPU backend and reference executor. Its Target encodes the tile IR
// as the artifact (ir.Encode); its Device decodes an artifact once into an executable program
// and runs a launch's programs in parallel on worker goroutines (NewDevice(threads), 0: all
// cores). Buffers are host memory; (*Buffer).Bytes gives the runtime zero-copy access.
//
// Execution model (compile.go): every SSA value of the kernel gets a slot holding a typed Go
// slice (fp16, bf16 and fp32 values in []float32, fp64 in []float64, every integer, i1 and
// pointer in []int64, normalized to its dtype after each operation). Slots are allocated once
// per worker and reused by every program that worker runs, so the steady state allocates
// nothing per op or per program. Loop-carried values move between slots by swapping storage.
// Pointers are encoded as the bound buffer's tag (parameter index + 1) in the high 16 bits
// and the element offset in the low 48 bits, so a Select between pointers of different
// buffers works and every access is checked against its own buffer. An offset that leaves
// ±2^47 is never wrapped: the pointer becomes wild (launch.go) and dereferencing it is an
// out-of-bounds error naming the offset; symbolic tiles are range-checked in int64.
//
// Checks: a kernel is verified (ir.Verify) before it is compiled, so the type rules are
// triton/ir's alone and an artifact that breaks them is refused with the rule's error. Every
// unmasked lane of every load, store and atomic is bounds-checked (including
// jit.Arg.Offset); a violation stops the launch with an error naming the kernel, the source
// position, the program id, the element offset and the buffer length; when several programs
// fail, the lowest-numbered one is reported, whatever the workers' timing. Masked lanes are never
// touched. Integer division by zero is an error too, and so is a false lane of a
// tl.device_assert (a *jit.AssertError naming the lane). fp16/bf16 results round to nearest even
// after every operation, as on the GPU; float math is IEEE (transcendentals through float64).
//
// Speed, in the order it matters:
//   - tl.dot runs on register-blocked micro-kernels chosen at run time through
//     golang.org/x/sys/cpu: AVX-512 12x32 on AMD, 8x32 on Intel (24 or 16 accumulators:
//     each measured faster on its vendor's CPU) or AVX2/FMA 6x16 (12 accumulators), pure
//     Go otherwise (dot*.go). The kernels are generated
//     (dot_asm_gen.go) for every row count, so no size falls off SIMD: leftover rows run on
//     the kernel for exactly those rows (merged with the last full block), 1-4 rows on wider
//     strips (4x64, 4x24), a 16-wide strip on 16-wide kernels, leftover columns on AVX-512
//     k-masked kernels (a right edge of 16 or less shares the broadcasts of the last strip, 8x48;
//     on Intel, fewer than 256 columns that 48-wide strips cover in fewer strips than 32-wide
//     ones, 81-96 in 2 rather than 3 as a folded 6x6 map's 92, run on 8x48 masked kernels
//     alone, prefetching rows of A 4 KB or more apart over two strips as below)
//     or under AVX2 on an 8- or 16-wide kernel through a B panel zero-padded once per call
//     (but a last column past 8, 16 or 24, a 3x3 map's 9 pixels, runs on the gemv kernels);
//     odd sizes cost about their flops. Rows of B 4 KB or more apart (1 KB over k > 128 with
//     four row blocks or more) are packed once per call, 128 columns at a time, into one contiguous
//     [k, w] panel per strip (the copy prefetching rows of B a few ahead: a page apart, the
//     hardware prefetcher follows none), k then running in chunks of 256 so that a strip's
//     panel stays in the L1 cache across its row blocks; rows of A 4 KB or more apart are
//     packed closer; k runs in chunks of 512 otherwise. Rows of
//     A that far apart and too few columns to pack them (a convolution's row-major weight
//     against a narrow pixel tile, each weight read once from the L3 or memory) run on
//     kernels that prefetch each row of A 512 bytes ahead every 16 k steps (past 64 columns,
//     up to 96, the first strip alone: the others find A in cache) (the hardware
//     prefetcher does not follow 8 rows at once; past a row's end they fetch the next k
//     block of the same rows, which the loop's next dot reads); a loop of such dots queues
//     them as a tap loop's (below), however deep, so that each register block walks its
//     rows of A from end to end. With
//     16 rows or fewer (a Linear on a few rows: memory-bound on its weight) k runs in chunks
//     of 16 instead, each chunk's rows of B read left to right across every strip, so B
//     streams in order rather than strip by strip down all of k (same sums, same order). A
//     loop-carried accumulator is updated in place. A loop nest that only carries its
//     accumulator and stores nothing (a convolution's taps) queues its shallow dots over
//     buffer views and, when it ends, sums all of them per register block on the panels
//     kernels (8x48 on Intel AVX-512: three B vectors a broadcast; under AVX2 6x16 with 4x16
//     for the rows left, and a right edge on them or 8-wide ones through zero-padded copies),
//     bit for bit the dots in turn (panels.go): column strips outside, or, where the rows of
//     A outweigh B and the L2 cache (a folded small map's weight), row blocks outside, each
//     block's first strip on kernels that prefetch its rows ahead. When the nest's
//     accumulator then goes through per-row steps (a bias, BatchNorm's multiply and add, a
//     residual tile added, a NaN-propagating ReLU) before its stores, those steps join the
//     queue (a residual loaded for the chain alone, when the stores join too, read in place
//     from its buffer's rows, else copied as it joins): each register
//     block goes through them right after
//     its last panel, while in the L1 cache, instead of a pass over the whole tile per step
//     (a bias, then BatchNorm's multiply and add, then the residual, then the ReLU, any of
//     them in that order, in one AVX2 loop over the block's rows: epilogueRowsAVX2; other
//     chains op by op);
//     the queue runs when the result is first read (panels_epilogue.go). When that result is
//     only stored, to rectangles of one fp32 buffer's rows (the output rows or padded planes,
//     the latter also through a select that zeroes the dropped columns: its column runs go
//     with the store), the stores join the queue too: each block is copied to them right
//     after its epilogue, instead of a pass over the tile per store (panels_store.go). Those
//     stores are then all that reads the accumulator, so only the columns they take from it
//     get products: where those are rows as wide as half a strip (a 16-wide map's flat
//     padded pixels under AVX-512, an 8-wide one's under AVX2), each strip is two rows' live
//     columns on the pair kernels (the second vector off past the first), not the dead
//     columns between rows nor a right edge (pairStrip); rows a strip wide (a 32-wide map
//     in tiles of whole rows, lowering's RowTiles) run a plain strip each. tl.trans of a
//     2-D fp32 tile (the weight operand of a Linear) is an AVX2 8x8-block transpose
//     (shape.go, vec_amd64.s), left to the dot when the dot is its only user: a dot of a few
//     live rows (3, or 32 over k >= 256) then reads the untransposed tile in place, each
//     row of it once, in order, on the gemv kernels (gemv.go: four rows of B against up to
//     three of A, vector partial sums folded at the end), and transposes it otherwise. A
//     dot whose B has exactly 4 live columns (a 1x1 convolution's pixels on a 2x2 map) runs
//     on the gemv kernels too, over those columns copied transposed (dot.go's dotF32 and
//     gemvColumns, which also run gemmF32's gemv column); so does, under AVX-512 on AMD, a
//     product of 9 columns (a 1x1 convolution's 3x3 map) against rows of A 4 KB or more
//     apart, which on the masked 16-wide strip would use 9 of 16 lanes and read 16 rows of
//     A that share an L1 set (gemvTail).
//   - tl.dot multiplies only what is live (extent.go): a masked fp32 load with other=0 records
//     the live extent of its tile (rows < M, k < K), tl.trans carries it over, and the dot
//     runs on the live block, so an edge tile of a 257 x 131 matmul costs its live part; when
//     the tile's one consumer is a dot, only the live rectangle is written. Dropped products
//     all have a zero factor; an infinity or NaN in the other operand (0*inf = NaN) sends the
//     dot to the whole zero-padded tiles, so results stay bit-identical. When the
//     accumulator reaches memory only through element-wise ops and stores under output masks
//     computed before the loop (observed.go), no one sees its lanes outside the masks'
//     rectangle: the dot scans no operand for infinities, and the accumulator's fill and the
//     epilogue's steps (row broadcasts, scalar ops, GELU, x*a+b, unary and binary ops) cover
//     that rectangle alone, so an odd-sized edge tile costs its live part throughout.
//   - Dot operands are read in place (alias.go): a fully live 2-D tile whose rows are apart in
//     the buffer, or an edge tile whose live lanes are one block, is a strided view (a
//     leading dimension) that tl.dot and tl.trans read directly; no copy, no zero fill. A
//     tile loaded only to be stored (a copy kernel: conv_pad.py) is such a view too, and the
//     store moves its rows buffer to buffer, once (into the buffer they come from, they are
//     copied out first: the load's values precede the store); stored under the load's own
//     mask, a partly masked one (a tile of more planes than there are) views its live lanes
//     alone, as a residual does.
//   - Index tiles stay symbolic (lazy.go): pid*BLOCK + arange, ptr + offs, offs < n, and
//     offs[:, None]*stride + arange[None, :] even when offs is gathered (x % M) are affine
//     forms and interval masks, never filled element by element; integer literal tiles
//     (iw >= 0, ow * 1, x - 1) fold into them as constants. Load and Store solve a row's
//     live lanes (conditions that do not vary by row once per tile), check the row once
//     and copy it; when the live lanes are one rectangle (conditions on rows alone and on
//     columns alone) the whole span is checked once and the rows copied with no mask solved
//     per row (memOp.moveRect; lanes a stride apart, a strided pool's taps, likewise,
//     stride-2 rows 8 lanes at a time with AVX2: evenLanes). A tile that is one contiguous block
//     with every lane live is checked and copied at once, and an fp32 load whose consumers
//     only read it before any store views the buffer instead of copying (alias.go). Any
//     other consumer materializes symbolic tiles first, so the rest of the executor only
//     sees values; a gathered row that is piecewise contiguous (a pixel tile crossing image
//     rows) still moves run by run (memory.go, forRuns); a 2-D fp32 load whose columns are
//     gathered in runs of consecutive elements (a flat convolution's dense residual at
//     (q // Wp) * OW + q % Wp, its offsets a vector of the affine form, or the sum of two)
//     copies each run of live lanes at once, rows reusing the runs of the row before
//     (lazy.go, loadColumnRuns); and an fp32 row whose pointers are one
//     arithmetic progression (a column of a transposed view) is checked at its two ends and
//     moved by one strided loop (lazy.go, moveStrided).
//   - Constants (tl.zeros, `other` tiles) are computed once per frame; instructions that
//     depend only on parameters run once per worker and launch, wherever they sit, other
//     loop invariants once per loop (hoisting); splats and float constant tiles feeding
//     binary ops are read as scalars (splat.go); fp32 add/sub/mul/div/min/max run on AVX2 loops (vec_amd64.s),
//     the NaN-propagating max/min (propagate_nan=ALL: relu) as one MAXPS/MINPS per vector,
//     and x*a + b with scalar a, b (or per-row columns a, b: BatchNorm's scale and shift
//     outside the panels flush) is one loop (muladd.go), still rounded twice. Row and
//     column broadcasts are read in place by their fp32 consumers, and an i1 row mask
//     broadcast over a select's rows splits each row into runs copied whole (rowbcast.go).
//     An fp32 arithmetic step or select whose operand dies with it writes over the
//     operand's storage (never a buffer view), so an epilogue chain stays on one tile in
//     the L1 cache (inplace.go).
//   - erf (GELU) is a table-driven Taylor expansion equal to float32(math.Erf) bit for bit
//     (erf.go): with AVX-512, degree 9 (a degree-22 Taylor expansion economized) on 16
//     intervals of [0, 4), coefficients picked by VPERMT2PD, 8 lanes at a time; otherwise
//     degree 6 on a 1/32 grid, 4 lanes at a time with AVX2 (about 2.2 ns an element). The exact GELU around it,
//     x*0.5 * (1 + erf(x*c)), is one step over L1-sized chunks (gelu.go), each op the
//     unfused one, so the results are too.
//   - exp (softmax, attention, tl.sigmoid) is a degree-11 polynomial after an ln2 reduction,
//     4 lanes at a time with AVX2/FMA, equal to float32(math.Exp) bit for bit (exp.go).
//   - PeakGFLOPS measures one core's FMA ceiling on the micro-kernels' instruction set
//     (peak.go), per CPU-second of its thread, for kernel benchmarks to report against.
//   - Programs are spread over workers; one program stays on one worker. The launching
//     goroutine works too, and helpers linger (spinning) for 200 µs after a launch, so the
//     next one finds them awake; each worker number keeps its own frame per kernel, so a
//     frame's tiles stay in one core's cache (pool.go).
package cpu
