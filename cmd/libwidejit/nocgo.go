//go:build !cgo

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "libwidejit is a shared library: build it with cgo and a C compiler (gcc):\n"+
		"  CGO_ENABLED=1 go build -buildmode=c-shared -o libwidejit.so ./cmd/libwidejit")
	os.Exit(2)
}
