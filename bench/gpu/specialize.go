package main

import (
	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
)

func specialize(file, text, fn string, sig map[string]string, consts map[string]any) (*ir.Func, error) {
	return triton.Specialize(file, text, fn, sig, consts)
}
