package device

import (
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
)

// openCUDAOrdinal and countCUDA are swapped by tests.
var (
	openCUDAOrdinal = func(ordinal int) (jit.Device, error) { return cuda.Open(ordinal) }
	countCUDA       = cuda.Count
)

// OpenCUDA opens GPU ordinal (0 is what Open("cuda") opens).
func OpenCUDA(ordinal int) (jit.Device, error) {
	if ordinal == 0 {
		return openCUDA()
	}
	return openCUDAOrdinal(ordinal)
}

// CUDACount is the number of GPUs the driver sees, or why there are none.
func CUDACount() (int, error) { return countCUDA() }
