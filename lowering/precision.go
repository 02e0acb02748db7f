package lowering

import (
	"fmt"
	"strings"

	"github.com/widejit/widejit/graph"
)

// The values of Options.Float32MatmulPrecision, spelled as torch.set_float32_matmul_precision
// spells them. They govern every fp32 tl.dot of the templates alike (Linear, matmul, fused
// MLP, convolutions, attention, recurrent layers); fp16 and bf16 operands are unaffected.
const (
	PrecisionHighest = "highest" // IEEE fp32 products (the default)
	PrecisionHigh    = "high"    // TF32 tensor cores, operands truncated to 10 mantissa bits
	PrecisionMedium  = "medium"  // operands rounded to bf16, fp32 accumulation
)

// Float32MatmulPrecisions lists the accepted precisions, the default first.
var Float32MatmulPrecisions = []string{PrecisionHighest, PrecisionHigh, PrecisionMedium}

// CheckFloat32MatmulPrecision accepts "" (the default, highest) and the names above.
func CheckFloat32MatmulPrecision(p string) error {
	switch p {
	case "", PrecisionHighest, PrecisionHigh, PrecisionMedium:
		return nil
	}
	return fmt.Errorf("float32 matmul precision %q: expected one of %s", p, strings.Join(Float32MatmulPrecisions, ", "))
}

// inputPrecision is the tl.dot input_precision the templates' INPUT_PRECISION constexpr gets.
func (o Options) inputPrecision() string {
	switch o.Float32MatmulPrecision {
	case PrecisionHigh:
		return "tf32"
	case PrecisionMedium:
		return "bf16" // widejit's extension of input_precision (docs/kernel-language.md)
	}
	return "ieee"
}

// dotKernel is newKernel for the templates with tl.dot: their consts also carry the fp32
// dots' precision, so it is part of every kernel's cache key.
func (l *lowerer) dotKernel(template, fn, text string, consts map[string]any) *KernelSource {
	consts["INPUT_PRECISION"] = l.opts.inputPrecision()
	return newKernel(template, fn, text, consts)
}

// dotFamilyData accepts the data of a dot family (convolutions, attention, recurrent layers):
// float32, or float16/bfloat16 computed as PyTorch does on a GPU (fp32 accumulation in every
// dot and reduction, results rounded to the data's dtype where they are stored). The graph's
// validation has already checked that the parameters have the data's dtype.
func dotFamilyData(what string, x View, family string) error {
	switch x.DType {
	case graph.Float32, graph.Float16, graph.BFloat16:
		return nil
	}
	return fmt.Errorf("%s is %s; %s are lowered for float32, float16 and bfloat16", what, x.DType, family)
}

// halfType is the tl dtype of float16 or bfloat16 data, which a template casts fp32 values to
// where PyTorch rounds them (and before they meet a dot operand of that dtype); "" for float32.
func halfType(d graph.DType) string {
	switch d {
	case graph.Float16:
		return "tl.float16"
	case graph.BFloat16:
		return "tl.bfloat16"
	}
	return ""
}
