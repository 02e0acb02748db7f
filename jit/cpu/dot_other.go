//go:build !amd64

package cpu

var (
	microKernel          func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
	microRows, microCols = 1, 1

	narrowKernel16, narrowKernel8 func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
)

func selectMicroKernel(bool) {}

func dotKernelName() string { return "pure Go dot" }
