package cuda

import "fmt"

// Count is the number of GPUs the driver sees (for --device cuda:all); without a driver it
// returns the driver's error.
func Count() (int, error) {
	drv, err := load()
	if err != nil {
		return 0, err
	}
	return countWith(drv)
}

func countWith(drv *driver) (int, error) {
	var n int32
	if err := drv.check("cuDeviceGetCount", drv.CuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("cuda: %w: the driver sees no GPU", ErrNoDevice)
	}
	return int(n), nil
}
