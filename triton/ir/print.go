package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// String prints the function as readable text, one instruction per line:
//
//	func @add_kernel(%x_ptr.1: *fp32, %n.2: i32)  [BLOCK=1024]
//	  %3 = program_id 0 : i32
//	  %6:2 = for %4, %5, %c1, %acc, %k : (fp32[16,16], i32) {
//	  ^(%7: i32, %8: fp32[16,16], %9: i32)
//	    ...
//	    yield %10, %11
//	  }
func (f *Func) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "func @%s(", f.Name)
	for i, p := range f.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", valueName(p), p.Type)
	}
	b.WriteString(")")
	if len(f.Consts) > 0 {
		fmt.Fprintf(&b, "  [%s]", f.ConstString())
	}
	b.WriteString("\n")
	printBlock(&b, f.Body, 1, false)
	return b.String()
}

func valueName(v *Value) string {
	if v == nil {
		return "%<nil>"
	}
	if v.Name != "" {
		return "%" + v.Name + "." + strconv.Itoa(v.ID)
	}
	return "%" + strconv.Itoa(v.ID)
}

func printBlock(b *strings.Builder, blk *Block, depth int, header bool) {
	ind := strings.Repeat("  ", depth)
	if header && len(blk.Args) > 0 {
		b.WriteString(ind[:len(ind)-2] + "^(")
		for i, a := range blk.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%s: %s", valueName(a), a.Type)
		}
		b.WriteString(")\n")
	}
	for _, in := range blk.Instrs {
		b.WriteString(ind)
		printInstr(b, in, depth)
		b.WriteString("\n")
	}
}

func printInstr(b *strings.Builder, in *Instr, depth int) {
	switch len(in.Results) {
	case 0:
	case 1:
		b.WriteString(valueName(in.Results[0]) + " = ")
	default:
		fmt.Fprintf(b, "%s:%d = ", valueName(in.Results[0]), len(in.Results))
	}
	b.WriteString(in.Op.String())
	if a := instrAttrs(in); a != "" {
		b.WriteString(" " + a)
	}
	for i, a := range in.Args {
		if i == 0 {
			b.WriteString(" ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(valueName(a))
	}
	if len(in.Results) > 0 {
		b.WriteString(" : ")
		if len(in.Results) > 1 {
			b.WriteString("(")
		}
		for i, r := range in.Results {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(r.Type.String())
		}
		if len(in.Results) > 1 {
			b.WriteString(")")
		}
	}
	if len(in.Regions) > 0 {
		b.WriteString(" {\n")
		for i, r := range in.Regions {
			if i > 0 {
				b.WriteString(strings.Repeat("  ", depth) + "} {\n")
			}
			printBlock(b, r, depth+1, true)
		}
		b.WriteString(strings.Repeat("  ", depth) + "}")
	}
	if in.Pos.Line > 0 {
		fmt.Fprintf(b, "  // line %d", in.Pos.Line)
	}
}

func instrAttrs(in *Instr) string {
	switch in.Op {
	case Const:
		if len(in.Results) == 1 && in.Results[0].Type.Elem.IsFloat() && !in.Results[0].Type.Ptr {
			return strconv.FormatFloat(in.Float, 'g', -1, 64)
		}
		return strconv.FormatInt(in.Int, 10)
	case ProgramID, NumPrograms, ExpandDims:
		return strconv.FormatInt(in.Int, 10)
	case Arange:
		if len(in.Ints) == 2 {
			return fmt.Sprintf("%d, %d", in.Ints[0], in.Ints[1])
		}
	case Permute:
		return fmt.Sprint(in.Ints)
	case Cmp:
		if in.Int >= 0 && int(in.Int) < len(cmpNames) {
			return cmpNames[in.Int]
		}
	case Cast:
		if in.Int == 1 {
			return "bitcast"
		}
	case Reduce:
		if len(in.Ints) >= 1 && in.Ints[0] >= 0 && in.Ints[0] < len(reduceNames) {
			s := fmt.Sprintf("%s axis=%d", reduceNames[in.Ints[0]], in.Int)
			if len(in.Ints) >= 2 && in.Ints[1] == 1 {
				s += " keep_dims"
			}
			return s
		}
	case AtomicRMW:
		if in.Int >= 0 && int(in.Int) < len(atomicNames) {
			return atomicNames[in.Int]
		}
	case Dot:
		switch in.Int {
		case PrecisionTF32:
			return "tf32"
		case PrecisionTF32x3:
			return "tf32x3"
		}
	case Print, Assert:
		return strconv.Quote(in.Str)
	case Load:
		if in.Int&1 != 0 {
			return "volatile"
		}
	}
	return ""
}
