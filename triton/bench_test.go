package triton

import (
	"os"
	"testing"
)

// BenchmarkSpecializeMatmul measures one specialization of a cached template (the lowering
// path: one template, many constexpr sets).
func BenchmarkSpecializeMatmul(b *testing.B) {
	src, err := os.ReadFile("testdata/kernels/matmul.py")
	if err != nil {
		b.Fatal(err)
	}
	sig := map[string]string{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
		"stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"}
	consts := map[string]any{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "ACTIVATION": "leaky_relu"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Specialize("matmul.py", string(src), "matmul_kernel", sig, consts); err != nil {
			b.Fatal(err)
		}
	}
}
