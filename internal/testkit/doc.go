// Package testkit holds helpers shared by the tests of several packages (lowering, jit/ptx):
// reading safetensors fixtures and comparing a run's outputs with the fixture's expected
// outputs, and the process's CPU time for benchmarks on a shared machine (CPUTime). Only
// tests, and internal/conformance (the backends' shared suite), import it. It depends on
// graph/safetensors alone, so any package's internal tests can use it without an import
// cycle.
package testkit
