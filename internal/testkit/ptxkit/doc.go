// Package ptxkit is the test helper that compiles a set of kernels to PTX and assembles them
// with ptxas, shared by the jit/ptx and lowering tests. Only _test.go files import it. It is
// apart from testkit because it imports jit/ptx: jit/ptx's own (package ptx) tests use
// testkit, and could not import a package that imports jit/ptx.
package ptxkit
