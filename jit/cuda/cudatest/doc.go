// Package cudatest is a CUDA driver written in Go for tests without a GPU (test support, not
// compiled into widejit): Stub queues each stream's work, runs it on a host device (the CPU
// backend) only when the host synchronises, in an order of its choosing among those the
// streams and events allow, records every operation, and fails a call that lets two unordered
// operations touch the same memory. Stub.Open gives a *cuda.Device over it (cuda.OpenDriver).
package cudatest
