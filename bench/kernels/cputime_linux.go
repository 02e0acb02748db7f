package main

import (
	"syscall"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID = 3).
func threadCPU() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}
