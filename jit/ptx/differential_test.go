package ptx

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/widejit/widejit/internal/half"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/triton/ir"
)

// runCase is a kernel with concrete buffers, scalars and a grid, run by the CPU backend and
// by the PTX emulator from identical inputs; every buffer must agree afterwards.
type runCase struct {
	kc      kernelCase
	grid    [3]int
	lens    map[string]int // pointer parameter -> elements
	scalars map[string]any
	rtol    float64 // fp16/bf16 buffers use at least 1e-2
	atol    float64
	ints    map[string][2]int // value range [lo, hi) of integer buffers (default -1000..1000)
	align16 []string          // jit.Spec.Align16 (the values given must honour it)
	ones    []string          // jit.Spec.EqualTo1 (the values given must be 1)
	wantPTX []string          // instructions the PTX must contain (e.g. "ld.global.v4.f32")
	notPTX  []string          // and must not
	fmaDots bool              // Target.FMADots
	stages  int               // num_stages given to the code generator (0: its default)
	arch    string            // the Target's arch (default sm_90)
	// ldmatrixBanks, when set, is how many of the run's ldmatrix phases have each bank
	// conflict degree (ptxemu.RunBanks)
	ldmatrixBanks map[int]int
	cpAsyncBanks  map[int]int // and of its cp.async copies (8 lanes of 16 bytes per phase)
	rowMajor      bool        // Target.rowMajorStaging
}

var runCases = []runCase{
	{kc: caseNamed("cpu_vector_add"), grid: [3]int{4, 1, 1}, lens: map[string]int{"x_ptr": 1000, "y_ptr": 1000, "output_ptr": 1000},
		scalars: map[string]any{"n_elements": int64(1000)}},
	{kc: caseNamed("cpu_softmax"), grid: [3]int{3, 1, 1}, lens: map[string]int{"output_ptr": 3 * 1003, "input_ptr": 3 * 1003},
		scalars: map[string]any{"input_row_stride": int64(1003), "output_row_stride": int64(1003), "n_rows": int64(3), "n_cols": int64(1000)}, rtol: 1e-5, atol: 1e-7},
	{kc: caseNamed("cpu_matmul"), grid: [3]int{4, 1, 1}, lens: map[string]int{"a_ptr": 64 * 48, "b_ptr": 48 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 48), rtol: 1e-5, atol: 1e-5, fmaDots: true, notPTX: []string{"mma"}},
	{kc: caseNamed("cpu_layernorm"), grid: [3]int{3, 1, 1}, lens: map[string]int{"X": 3 * 203, "Y": 3 * 203, "W": 200, "B": 200, "Mean": 3, "Rstd": 3},
		scalars: map[string]any{"stride": int64(203), "N": int64(200), "eps": 1e-5}, rtol: 1e-2, atol: 1e-2},
	{kc: caseNamed("cpu_attention_stage3"), grid: [3]int{2, 2, 1}, lens: map[string]int{"Q": 2 * 64 * 16, "K": 2 * 64 * 16, "V": 2 * 64 * 16, "M": 2 * 64, "Out": 2 * 64 * 16},
		scalars: attentionScalars(0.25, 1, 2, 64, 16), rtol: 1e-4, atol: 1e-5, fmaDots: true},
	{kc: caseNamed("triton_constructs_double"), grid: [3]int{3, 1, 1}, lens: map[string]int{"x_ptr": 40, "out_ptr": 40},
		scalars: map[string]any{"n": int64(37), "flag": int64(1)}, rtol: 1e-2, atol: 1e-2},
	{kc: caseNamed("triton_constructs_other"), grid: [3]int{2, 1, 1}, lens: map[string]int{"x_ptr": 20, "out_ptr": 20},
		scalars: map[string]any{"n": int64(13), "flag": int64(0)}, rtol: 1e-5, atol: 1e-6},
	{kc: caseNamed("triton_blockptr"), grid: [3]int{2, 2, 1}, lens: map[string]int{"src": 8 * 16, "dst": 8 * 16},
		scalars: map[string]any{"M": int64(7), "N": int64(13), "stride_m": int64(16)}},
	{kc: caseNamed("triton_reduce"), grid: [3]int{1, 1, 1}, lens: map[string]int{"x_ptr": 32, "out_ptr": 4}, rtol: 1e-5, atol: 1e-5},
	{kc: caseNamed("tutorial_softmax"), grid: [3]int{3, 1, 1}, lens: map[string]int{"output_ptr": 3 * 100, "input_ptr": 3 * 100},
		scalars: map[string]any{"input_row_stride": int64(100), "output_row_stride": int64(100), "n_rows": int64(3), "n_cols": int64(100)}, rtol: 1e-5, atol: 1e-7},
	{kc: caseNamed("ptx_features"), grid: [3]int{4, 1, 1}, lens: map[string]int{"x_ptr": 256, "h_ptr": 256, "i_ptr": 256, "b_ptr": 256, "out_ptr": 256 + 32, "cnt_ptr": 1},
		scalars: map[string]any{"n": int64(200), "seed": int64(1234)}, rtol: 1e-4, atol: 1e-4},
	{kc: caseNamed("cpujit_masks"), grid: [3]int{1, 1, 1}, lens: map[string]int{"x_ptr": 256, "out_ptr": 256 + 64},
		scalars: map[string]any{"n": int64(9), "m": int64(12), "lo": int64(3)}},
	{kc: caseNamed("cpujit_gather"), grid: [3]int{1, 1, 1}, lens: map[string]int{"x_ptr": 100, "idx_ptr": 8, "out_ptr": 3 * 64},
		scalars: map[string]any{"stride": int64(10)}, ints: map[string][2]int{"idx_ptr": {0, 10}}},

	// Tensor-core dots (mma.sync) against the CPU's fp32 dots. fp16/bf16 products are exact in
	// fp32, so only the summation order differs (1e-3). TF32 truncates each input to 10
	// mantissa bits (mma.sync reads fp32 operands as they stand): each product loses up to
	// 2^-9 of itself, toward zero, so a sum loses about 2^-10 of its value (rtol 1e-2) plus
	// noise of about 2^-10/sqrt(6)*sqrt(K) ~ 3e-3 at K = 48 unit-normal terms (atol 1e-2);
	// tf32_test.go checks the truncation itself with a bound per element. Shapes that do not
	// tile, and IEEE fp32, keep the FMA path.
	{kc: caseNamed("cpu_matmul"), grid: [3]int{4, 1, 1}, lens: map[string]int{"a_ptr": 64 * 48, "b_ptr": 48 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 48), rtol: 1e-2, atol: 1e-2, wantPTX: []string{"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}, notPTX: []string{"cvt.rna.tf32"}},
	{kc: caseNamed("cpu_attention_stage3"), grid: [3]int{2, 2, 1}, lens: map[string]int{"Q": 2 * 64 * 16, "K": 2 * 64 * 16, "V": 2 * 64 * 16, "M": 2 * 64, "Out": 2 * 64 * 16},
		scalars: attentionScalars(0.25, 1, 2, 64, 16), rtol: 1e-2, atol: 1e-2, wantPTX: []string{"m16n8k8"}},
	{kc: caseNamed("tutorial_matmul_fp16"), grid: [3]int{4, 1, 1}, lens: map[string]int{"a_ptr": 64 * 48, "b_ptr": 48 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 48), wantPTX: []string{"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}},
	{kc: caseNamed("tutorial_matmul_bf16"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 96, "b_ptr": 96 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 96), wantPTX: []string{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"}},
	{kc: caseNamed("ptx_bdot_f16"), grid: [3]int{1, 1, 1}, lens: map[string]int{"a_ptr": 2 * 32 * 32, "b_ptr": 2 * 32 * 16, "c_ptr": 2 * 32 * 16},
		rtol: 1e-3, atol: 1e-3, wantPTX: []string{"m16n8k16.row.col.f32.f16"}},
	{kc: caseNamed("ptx_bdot_bf16"), grid: [3]int{1, 1, 1}, lens: map[string]int{"a_ptr": 2 * 16 * 16, "b_ptr": 2 * 16 * 32, "c_ptr": 2 * 16 * 32},
		rtol: 1e-3, atol: 1e-3, wantPTX: []string{"m16n8k16.row.col.f32.bf16"}},
	{kc: caseNamed("ptx_bdot_tf32"), grid: [3]int{1, 1, 1}, lens: map[string]int{"a_ptr": 2 * 16 * 16, "b_ptr": 2 * 16 * 8, "c_ptr": 2 * 16 * 8},
		rtol: 1e-2, atol: 1e-2, wantPTX: []string{"m16n8k8.row.col.f32.tf32"}},
	{kc: caseNamed("ptx_bdot_k8"), grid: [3]int{1, 1, 1}, lens: map[string]int{"a_ptr": 16 * 8, "b_ptr": 8 * 8, "c_ptr": 16 * 8},
		rtol: 1e-5, atol: 1e-5, notPTX: []string{"mma"}},
	{kc: caseNamed("ptx_bdot_ieee"), grid: [3]int{1, 1, 1}, lens: map[string]int{"a_ptr": 2 * 16 * 16, "b_ptr": 2 * 16 * 8, "c_ptr": 2 * 16 * 8},
		rtol: 1e-5, atol: 1e-5, notPTX: []string{"mma"}},

	// Vectorized global access under Align16 hints: 256 elements over 128 threads make runs
	// of 2 (v2), 1024 over 128 or 256 threads runs of 4 (v4); the masks' bounds are multiples
	// of 16, so every vector is wholly in or wholly out. The emulator rejects misaligned
	// vector accesses.
	{kc: caseNamed("cpu_vector_add"), grid: [3]int{4, 1, 1}, lens: map[string]int{"x_ptr": 1024, "y_ptr": 1024, "output_ptr": 1024},
		scalars: map[string]any{"n_elements": int64(992)}, align16: []string{"x_ptr", "y_ptr", "output_ptr", "n_elements"},
		wantPTX: []string{"ld.global.v2.f32", "st.global.v2.f32"}},
	{kc: caseNamed("syntax_vector_add"), grid: [3]int{1, 1, 1}, lens: map[string]int{"x_ptr": 1024, "y_ptr": 1024, "output_ptr": 1024},
		scalars: map[string]any{"n_elements": int64(1008)}, align16: []string{"x_ptr", "y_ptr", "output_ptr", "n_elements"},
		wantPTX: []string{"ld.global.v4.b16", "st.global.v4.b16"}},
	{kc: caseNamed("cpu_softmax"), grid: [3]int{3, 1, 1}, lens: map[string]int{"output_ptr": 3 * 1008, "input_ptr": 3 * 1008},
		scalars: map[string]any{"input_row_stride": int64(1008), "output_row_stride": int64(1008), "n_rows": int64(3), "n_cols": int64(992)}, rtol: 1e-5, atol: 1e-7,
		align16: []string{"output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_cols"},
		wantPTX: []string{"ld.global.v4.f32", "st.global.v4.f32"}},
	{kc: caseNamed("cpu_layernorm"), grid: [3]int{3, 1, 1}, lens: map[string]int{"X": 3 * 208, "Y": 3 * 208, "W": 192, "B": 192, "Mean": 3, "Rstd": 3},
		scalars: map[string]any{"stride": int64(208), "N": int64(192), "eps": 1e-5}, rtol: 1e-2, atol: 1e-2,
		align16: []string{"X", "Y", "W", "B", "stride", "N"},
		wantPTX: []string{"ld.global.v2.b16", "st.global.v2.b16"}},
	// Whole-tile reductions whose chunks are the threads' own 16-byte runs fold in registers
	// (no staging store of the tile); with scalar runs (no Align16) the tile is staged.
	{kc: caseNamed("ptx_rowreduce"), grid: [3]int{3, 1, 1}, lens: map[string]int{"x_ptr": 3 * 512, "out_ptr": 9, "idx_ptr": 6},
		scalars: map[string]any{"n": int64(496)}, rtol: 1e-5, atol: 1e-5, align16: []string{"x_ptr", "n"},
		wantPTX: []string{"ld.global.v4.f32", "shfl.sync.bfly"}, notPTX: []string{"st.shared.v4"}},
	{kc: caseNamed("ptx_rowreduce"), grid: [3]int{3, 1, 1}, lens: map[string]int{"x_ptr": 3 * 512, "out_ptr": 9, "idx_ptr": 6},
		scalars: map[string]any{"n": int64(501)}, rtol: 1e-5, atol: 1e-5, wantPTX: []string{"shfl.sync.bfly"}},
	{kc: caseNamed("ptx_layernorm_1024"), grid: [3]int{3, 1, 1}, lens: map[string]int{"X": 3 * 1024, "Y": 3 * 1024, "W": 1024, "B": 1024, "Mean": 3, "Rstd": 3},
		scalars: map[string]any{"stride": int64(1024), "N": int64(1008), "eps": 1e-5}, rtol: 1e-2, atol: 1e-2,
		align16: []string{"X", "Y", "W", "B", "stride", "N"},
		wantPTX: []string{"ld.global.v4.b32", "shfl.sync.bfly"}, notPTX: []string{"st.shared.v4"}},
	{kc: caseNamed("ptx_vecloop"), grid: [3]int{1, 1, 1}, lens: map[string]int{"x_ptr": 3 * 512, "y_ptr": 512},
		scalars: map[string]any{"n": int64(496)}, rtol: 1e-6, atol: 1e-6, align16: []string{"x_ptr", "y_ptr", "n"},
		wantPTX: []string{"ld.global.v4.f32", "st.global.v4.f32"}},
	{kc: caseNamed("ptx_vecloop"), grid: [3]int{1, 1, 1}, lens: map[string]int{"x_ptr": 3 * 512, "y_ptr": 512},
		scalars: map[string]any{"n": int64(501)}, rtol: 1e-6, atol: 1e-6, notPTX: []string{".v4.", ".v2."}},
	// Eight fp16 per thread (2048 over 256 threads): 16-byte accesses as .v4.b32 of packed
	// pairs, unpacked into 16-bit registers.
	{kc: caseNamed("syntax_vector_add_wide"), grid: [3]int{1, 1, 1}, lens: map[string]int{"x_ptr": 2048, "y_ptr": 2048, "output_ptr": 2048},
		scalars: map[string]any{"n_elements": int64(2032)}, align16: []string{"x_ptr", "y_ptr", "output_ptr", "n_elements"},
		wantPTX: []string{"ld.global.v4.b32", "st.global.v4.b32", "mov.b32 {"}, notPTX: []string{".b16 {"}},
	// Unit strides specialized (jit.Spec.EqualTo1, as lowering's launches pass them): the
	// matmul's A rows, B rows and C rows are contiguous, so its loads and stores are vectors
	// (the dot operands' loads 16-byte cp.async copies into shared memory, async.go; masked
	// runs zero-filled); the strides are the constant 1 in the PTX. Without EqualTo1 (the
	// cpu_matmul case above) they are run-time values and nothing is vectorized.
	{kc: caseNamed("cpu_matmul"), grid: [3]int{4, 1, 1}, lens: map[string]int{"a_ptr": 64 * 48, "b_ptr": 48 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 48), rtol: 1e-5, atol: 1e-5, fmaDots: true,
		align16: []string{"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"},
		ones:    []string{"stride_ak", "stride_bn", "stride_cn"},
		wantPTX: []string{"cp.async.ca.shared.global", "], 16", "cp.async.wait_all", "st.global.v4.f32", "mov.u32 %r"}},
	{kc: caseNamed("cpu_matmul"), grid: [3]int{4, 1, 1}, lens: map[string]int{"a_ptr": 64 * 48, "b_ptr": 48 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 48), rtol: 1e-5, atol: 1e-5, fmaDots: true,
		align16: []string{"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"},
		notPTX:  []string{"ld.global.v", "st.global.v", "], 16", "], 8"}}, // 4-byte cp.async at most
	// The num_stages-deep cp.async pipeline (pipeline.go): tensor-core dots whose operands are
	// 16-byte copies, a ring of num_stages buffers with the copies num_stages-1 steps ahead.
	// K loops longer than the ring (6 steps, the last masked; 5 in bf16) and shorter than its
	// lookahead (1 step for 3 steps ahead: the copies past the end are predicated off), 2 to 4
	// stages, and 1 stage (no pipeline). The emulator lands a copy only at the wait that covers its group, so a
	// step that read its buffer too early would read the previous step's operands.
	{kc: caseNamed("ptx_kloop_f16"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 176, "b_ptr": 176 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 176), align16: matmulAligned, ones: matmulOnes,
		wantPTX: []string{"cp.async.commit_group", "cp.async.wait_group 1", "m16n8k16.row.col.f32.f16"},
		// per CTA, 6 K steps x 16 tiles x 2 k16 slices: 192 ldmatrix.x4 of A, 4 phases each,
		// and 192 .x2.trans of B, 2 phases each, all conflict-free with the swizzle
		ldmatrixBanks: map[int]int{1: 2 * 192 * (4 + 2)},
		// 8 issues (6 steps, 2 ahead) of 128 + 256 16-byte copies, 8 lanes a phase: the
		// swizzle permutes 16-byte chunks within 128-byte lines, so they stay conflict-free
		cpAsyncBanks: map[int]int{1: 2 * 8 * (128 + 256) / 8}},
	// the same staged row-major: A's 8 rows of 64 bytes (BK = 32) per phase hit the same
	// banks 4 ways, B's rows of 128 bytes (N = 64) all 8 ways
	{kc: caseNamed("ptx_kloop_f16"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 176, "b_ptr": 176 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 176), align16: matmulAligned, ones: matmulOnes, rowMajor: true,
		ldmatrixBanks: map[int]int{4: 2 * 192 * 4, 8: 2 * 192 * 2}, cpAsyncBanks: map[int]int{1: 2 * 8 * (128 + 256) / 8}},
	{kc: caseNamed("ptx_kloop_f16"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 176, "b_ptr": 176 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 176), align16: matmulAligned, ones: matmulOnes, stages: 2,
		wantPTX: []string{"cp.async.wait_group 0"}},
	{kc: caseNamed("ptx_kloop_f16"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 32, "b_ptr": 32 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 32), align16: matmulAligned, ones: matmulOnes, stages: 4,
		wantPTX: []string{"cp.async.wait_group 2"}},
	{kc: caseNamed("ptx_kloop_f16"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 176, "b_ptr": 176 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 176), align16: matmulAligned, ones: matmulOnes, stages: 1,
		wantPTX: []string{"cp.async.wait_all"}, notPTX: []string{"wait_group", "commit_group"}},
	// the accumulator starts from C: converted to fragments through shared memory, which the
	// ring then overwrites (a barrier first)
	{kc: caseNamed("ptx_kloop_f16_acc"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 176, "b_ptr": 176 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 176), align16: matmulAligned, ones: matmulOnes,
		wantPTX: []string{"cp.async.wait_group 1"}},
	{kc: caseNamed("ptx_kloop_bf16"), grid: [3]int{2, 1, 1}, lens: map[string]int{"a_ptr": 64 * 160, "b_ptr": 160 * 64, "c_ptr": 64 * 64},
		scalars: matmulScalars(64, 64, 160), align16: matmulAligned, ones: matmulOnes,
		wantPTX: []string{"cp.async.wait_group 1", "m16n8k16.row.col.f32.bf16"}},
	// Hopper (wgmma.go): the pipelined K loop on wgmma.mma_async, A and B^T read through
	// swizzled matrix descriptors (64-byte rows: the 64B swizzle; 128-byte: 128B), at sizes
	// that leave every edge masked (M, N, K not multiples of the tile). 8 warps: two
	// warpgroups, each with one 64x64 block of a 128x64 tile; 24 KiB stages, three by default
	// (a 72 KiB ring: sm_90a's may pass 48 KiB), two in the bf16 case (cp.async.wait_group 0).
	{kc: caseNamed("ptx_kloop_t_f16"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 100 * 80, "b_ptr": 72 * 80, "c_ptr": 100 * 72},
		scalars: btScalars(100, 72, 80), align16: btAligned, ones: btOnes, arch: "sm_90a",
		wantPTX: []string{"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "fence.proxy.async", "cp.async.wait_group 1"}, notPTX: []string{"mma.sync", "ldmatrix"}},
	{kc: caseNamed("ptx_kloop_t_bf16"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 200 * 144, "b_ptr": 120 * 144, "c_ptr": 200 * 120},
		scalars: btScalars(200, 120, 144), align16: btAligned, ones: btOnes, arch: "sm_90a", stages: 2,
		wantPTX: []string{"wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "cp.async.wait_group 0"}, notPTX: []string{"mma.sync"}},
	// TF32 (fp32 operands at Triton's default precision) on wgmma.mma_async m64nNk8 .tf32:
	// K-major operands only (A, and B^T as a Linear's weight), 128-byte rows of 32 fp32
	// values, the operands truncated to TF32 as mma.sync's are
	{kc: caseNamed("ptx_kloop_t_tf32"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 200 * 80, "b_ptr": 120 * 80, "c_ptr": 200 * 120},
		scalars: btScalars(200, 120, 80), align16: btAligned, ones: btOnes, arch: "sm_90a", rtol: 1e-2, atol: 1e-2,
		wantPTX: []string{"wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", "fence.proxy.async"}, notPTX: []string{"mma.sync", "ldmatrix"}},
	// the accumulator starts from C, converted into the two warpgroups' fragments before the
	// loop through shared memory, which the ring then overwrites
	{kc: caseNamed("ptx_kloop_t_f16_acc"), grid: [3]int{1, 2, 1}, lens: map[string]int{"a_ptr": 72 * 48, "b_ptr": 100 * 48, "c_ptr": 72 * 100},
		scalars: btScalars(72, 100, 48), align16: btAligned, ones: btOnes, arch: "sm_90a",
		wantPTX: []string{"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"}},
	// B staged as it stands ([K, N]): MN-major for wgmma (imm-trans-b 1), its 64- or
	// 128-byte rows of N swizzled as A's rows of K are; the last K tile masked
	{kc: caseNamed("ptx_kloop_f16_m64"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 128 * 80, "b_ptr": 80 * 128, "c_ptr": 128 * 128},
		scalars: matmulScalars(128, 128, 80), align16: matmulAligned, ones: matmulOnes, arch: "sm_90a",
		wantPTX: []string{"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "1, 1, 0, 1;"}, notPTX: []string{"mma.sync", "1, 1, 0, 0;"}},
	{kc: caseNamed("ptx_kloop_bf16_w8"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 256 * 112, "b_ptr": 112 * 64, "c_ptr": 256 * 64},
		scalars: matmulScalars(256, 64, 112), align16: matmulAligned, ones: matmulOnes, arch: "sm_90a",
		wantPTX: []string{"wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16"}, notPTX: []string{"mma.sync"}},
	// the same kernel for sm_90 keeps mma.sync; per CTA, 3 K steps x 32 tiles x 2 k16 slices:
	// 192 ldmatrix.x4 of A (4 phases each) and 192 .x2 of B^T (2 phases), whose 8 rows of 64
	// bytes (BK = 32) hit the same banks 4 ways staged row-major, none swizzled
	{kc: caseNamed("ptx_kloop_t_f16"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 100 * 80, "b_ptr": 72 * 80, "c_ptr": 100 * 72},
		scalars: btScalars(100, 72, 80), align16: btAligned, ones: btOnes,
		wantPTX: []string{"mma.sync.aligned.m16n8k16"}, notPTX: []string{"wgmma"},
		ldmatrixBanks: map[int]int{1: 4 * 192 * (4 + 2)}, cpAsyncBanks: map[int]int{1: 4 * 5 * (256 + 256) / 8}},
	{kc: caseNamed("ptx_kloop_t_f16"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 100 * 80, "b_ptr": 72 * 80, "c_ptr": 100 * 72},
		scalars: btScalars(100, 72, 80), align16: btAligned, ones: btOnes, rowMajor: true,
		ldmatrixBanks: map[int]int{4: 4 * 192 * (4 + 2)}, cpAsyncBanks: map[int]int{1: 4 * 5 * (256 + 256) / 8}},
	// TF32 with B^T on mma.sync: 32-bit fragments through ldmatrix, rows of 128 bytes (BK =
	// 32 fp32), 4 k8 slices per step: 8 ways row-major, none swizzled
	{kc: caseNamed("ptx_kloop_t_tf32"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 200 * 80, "b_ptr": 120 * 80, "c_ptr": 200 * 120},
		scalars: btScalars(200, 120, 80), align16: btAligned, ones: btOnes, rtol: 1e-2, atol: 1e-2,
		wantPTX:       []string{"mma.sync.aligned.m16n8k8.row.col.f32.tf32"},
		ldmatrixBanks: map[int]int{1: 4 * 3 * 64 * 4 * (4 + 2)},
		// 2 stages (3 would pass 48 KiB): 4 issues of 1024 + 512 copies
		cpAsyncBanks: map[int]int{1: 4 * 4 * (1024 + 512) / 8}},
	{kc: caseNamed("ptx_kloop_t_tf32"), grid: [3]int{2, 2, 1}, lens: map[string]int{"a_ptr": 200 * 80, "b_ptr": 120 * 80, "c_ptr": 200 * 120},
		scalars: btScalars(200, 120, 80), align16: btAligned, ones: btOnes, rtol: 1e-2, atol: 1e-2, rowMajor: true,
		ldmatrixBanks: map[int]int{8: 4 * 3 * 64 * 4 * (4 + 2)}, cpAsyncBanks: map[int]int{1: 4 * 4 * (1024 + 512) / 8}},
}

// kloop_t's specialization: K (and so A's and B^T's row strides) divisible by 16, unit
// strides along K and C's rows; M, N and C's row stride left odd.
var btAligned, btOnes = []string{"a_ptr", "b_ptr", "c_ptr", "K", "stride_am", "stride_bn"}, []string{"stride_ak", "stride_bk", "stride_cn"}

// btScalars binds kloop_t's scalars for A [m, k], B^T [n, k] and C [m, n], all contiguous.
func btScalars(m, n, k int) map[string]any {
	return map[string]any{"M": int64(m), "N": int64(n), "K": int64(k), "stride_am": int64(k), "stride_ak": int64(1),
		"stride_bk": int64(1), "stride_bn": int64(k), "stride_cm": int64(n), "stride_cn": int64(1)}
}

// matmulAligned and matmulOnes are what lowering's launches tell a contiguous matmul.
var (
	matmulAligned = []string{"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"}
	matmulOnes    = []string{"stride_ak", "stride_bn", "stride_cn"}
)

// matmulScalars binds matmul_kernel's scalars for contiguous row-major operands.
func matmulScalars(m, n, k int) map[string]any {
	return map[string]any{"M": int64(m), "N": int64(n), "K": int64(k), "stride_am": int64(k), "stride_ak": int64(1),
		"stride_bk": int64(n), "stride_bn": int64(1), "stride_cm": int64(n), "stride_cn": int64(1)}
}

// attentionScalars binds _attn_fwd's scalars for contiguous [z, h, nctx, dim] tensors.
func attentionScalars(smScale float64, z, h, nctx, dim int) map[string]any {
	m := map[string]any{"sm_scale": smScale, "Z": int64(z), "H": int64(h)}
	for _, t := range []struct{ tensor, dims string }{{"q", "zhmk"}, {"k", "zhnk"}, {"v", "zhkn"}, {"o", "zhmn"}} {
		for i, stride := range []int{h * nctx * dim, nctx * dim, dim, 1} {
			m["stride_"+t.tensor+string(t.dims[i])] = int64(stride)
		}
	}
	return m
}

func fillRandom(rng *rand.Rand, t ir.Type, n int) []byte {
	out := make([]byte, n*t.Elem.Size())
	for i := range n {
		switch t.Elem {
		case ir.F32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		case ir.F16:
			binary.LittleEndian.PutUint16(out[2*i:], half.F32ToF16(float32(rng.NormFloat64())))
		case ir.BF16:
			binary.LittleEndian.PutUint16(out[2*i:], half.F32ToBF16(float32(rng.NormFloat64())))
		case ir.I32:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(rng.Intn(2001)-1000)))
		case ir.I8:
			out[i] = byte(int8(rng.Intn(255) - 127))
		default:
			panic("fillRandom: " + t.Elem.String())
		}
	}
	return out
}

func decodeElems(t ir.Type, b []byte) []float64 {
	n := len(b) / t.Elem.Size()
	out := make([]float64, n)
	for i := range out {
		switch t.Elem {
		case ir.F32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case ir.F16:
			out[i] = float64(half.F16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
		case ir.BF16:
			out[i] = float64(half.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
		case ir.I32:
			out[i] = float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		case ir.I8:
			out[i] = float64(int8(b[i]))
		}
	}
	return out
}

func TestEmulatedPTXMatchesCPU(t *testing.T) {
	for _, rc := range runCases {
		name := rc.kc.name
		if rc.align16 != nil {
			name += "_align16"
		}
		if rc.ones != nil {
			name += "_ones"
		}
		if rc.fmaDots {
			name += "_fma"
		}
		if rc.arch != "" {
			name += "_" + rc.arch
		}
		t.Run(name, func(t *testing.T) {
			f := rc.kc.specialize(t)
			rng := rand.New(rand.NewSource(7))
			init := make([][]byte, len(f.Params))
			for i, p := range f.Params {
				if p.Type.Ptr {
					n, ok := rc.lens[p.Name]
					if !ok {
						t.Fatalf("no length for %s", p.Name)
					}
					init[i] = fillRandom(rng, p.Type, n)
					if r, ok := rc.ints[p.Name]; ok {
						for j := range n {
							binary.LittleEndian.PutUint32(init[i][4*j:], uint32(int32(r[0]+rng.Intn(r[1]-r[0]))))
						}
					}
				}
			}
			cpuOut := runOnCPU(t, rc, f, init)
			emuOut := runEmulated(t, rc, init)
			for i, p := range f.Params {
				if !p.Type.Ptr {
					continue
				}
				rtol, atol := rc.rtol, rc.atol
				if p.Type.Elem == ir.F16 || p.Type.Elem == ir.BF16 {
					rtol, atol = max(rtol, 1e-2), max(atol, 1e-2)
				}
				want, got := decodeElems(p.Type, cpuOut[i]), decodeElems(p.Type, emuOut[i])
				bad := 0
				for j := range want {
					d := math.Abs(got[j] - want[j])
					if d > atol+rtol*math.Abs(want[j]) && !(math.IsNaN(got[j]) && math.IsNaN(want[j])) {
						if bad < 5 {
							t.Errorf("%s[%d] = %v on the PTX emulator, %v on the CPU", p.Name, j, got[j], want[j])
						}
						bad++
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d elements differ (rtol %g, atol %g)", p.Name, bad, len(want), rtol, atol)
				}
			}
		})
	}
}

func runOnCPU(t *testing.T, rc runCase, f *ir.Func, init [][]byte) [][]byte {
	t.Helper()
	dev := cpu.NewDevice(1)
	k, err := dev.LoadFunc(f)
	if err != nil {
		t.Fatal(err)
	}
	args := make([]jit.Arg, len(f.Params))
	bufs := make([]jit.Buffer, len(f.Params))
	for i, p := range f.Params {
		if p.Type.Ptr {
			b, err := dev.Alloc(p.Type.Elem, len(init[i])/p.Type.Elem.Size())
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Upload(b, init[i]); err != nil {
				t.Fatal(err)
			}
			bufs[i] = b
			args[i] = jit.Arg{Buf: b}
		} else {
			args[i] = jit.Arg{Scalar: rc.scalars[p.Name]}
		}
	}
	if err := k.Launch(rc.grid, args); err != nil {
		t.Fatalf("cpu: %v", err)
	}
	out := make([][]byte, len(f.Params))
	for i, b := range bufs {
		if b != nil {
			out[i] = make([]byte, len(init[i]))
			if err := dev.Download(b, out[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func runEmulated(t *testing.T, rc runCase, init [][]byte) [][]byte {
	t.Helper()
	f := rc.kc.specialize(t)
	spec := jit.Spec{NumWarps: rc.kc.warps, Align16: rc.align16, EqualTo1: rc.ones}
	if rc.stages != 0 {
		spec.Consts = map[string]any{"num_stages": int64(rc.stages)}
	}
	arch := rc.arch
	if arch == "" {
		arch = "sm_90"
	}
	a, err := Target{Arch: arch, FMADots: rc.fmaDots, rowMajorStaging: rc.rowMajor}.Codegen(f, spec)
	if err != nil {
		t.Fatal(err)
	}
	text := string(a.Payload)
	for _, w := range rc.wantPTX {
		if !strings.Contains(text, w) {
			t.Errorf("the PTX has no %s", w)
		}
	}
	for _, w := range rc.notPTX {
		if strings.Contains(text, w) {
			t.Errorf("the PTX has %s", w)
		}
	}
	if rc.align16 == nil && (strings.Contains(text, ".v2.") || strings.Contains(text, ".v4.")) {
		t.Errorf("vector access without Align16 hints")
	}
	if arch == "sm_90a" { // ISA 8.0: beyond Debian's ptxas 11.8, which the other tests use
		if ptxas, err := FindCUDA12Tool(".", "ptxas"); err != nil {
			t.Logf("not assembled: %v", err)
		} else if _, err := Assemble(ptxas, arch, text); err != nil {
			t.Errorf("%v", err)
		}
	}
	prog, err := ptxemu.Parse(string(a.Payload))
	if err != nil {
		t.Fatal(err)
	}
	mem := &ptxemu.Memory{}
	params := make([]uint64, len(f.Params))
	bufs := map[int][]byte{}
	for i, p := range f.Params {
		switch {
		case p.Type.Ptr:
			params[i], bufs[i] = mem.Alloc(len(init[i]))
			copy(bufs[i], init[i])
		case p.Type.Elem == ir.F32:
			params[i] = uint64(math.Float32bits(float32(toFloat(rc.scalars[p.Name]))))
		default:
			params[i] = uint64(toInt(rc.scalars[p.Name]))
		}
	}
	smem, _ := strconv.Atoi(a.Meta["shared_bytes"])
	if rc.ldmatrixBanks == nil {
		err = ptxemu.Run(prog, mem, rc.grid, params, smem)
	} else {
		var banks *ptxemu.Banks
		banks, err = ptxemu.RunBanks(prog, mem, rc.grid, params, smem)
		if err == nil && !maps.Equal(banks.Ldmatrix, rc.ldmatrixBanks) {
			t.Errorf("ldmatrix phases by bank conflict degree: %v, want %v", banks.Ldmatrix, rc.ldmatrixBanks)
		}
		if err == nil && !maps.Equal(banks.CpAsync, rc.cpAsyncBanks) {
			t.Errorf("cp.async phases by bank conflict degree: %v, want %v", banks.CpAsync, rc.cpAsyncBanks)
		}
	}
	if err != nil {
		t.Fatalf("emulated PTX: %v", err)
	}
	out := make([][]byte, len(f.Params))
	for i, b := range bufs {
		out[i] = b
	}
	return out
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	panic(fmt.Sprintf("scalar %v", v))
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case bool:
		if x {
			return 1
		}
		return 0
	}
	panic(fmt.Sprintf("scalar %v", v))
}
