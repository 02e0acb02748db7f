package lowering

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// Strategies of a group.
const (
	Sequential = "sequential" // N launches of the single-model kernel, jit.Arg.Offset per model
	Batched    = "batched"    // one launch whose grid covers the N models
	Fused      = "fused"      // one launch for several graph nodes and all N models
)

// ArgKind says what a launch argument is.
type ArgKind int

const (
	PtrArg ArgKind = iota
	IntArg
	FloatArg
)

// LaunchArg is one runtime parameter of a kernel: a pointer into a buffer (Offset elements in;
// model m's data starts ModelStride further per model), or a scalar.
type LaunchArg struct {
	Name        string
	Kind        ArgKind
	Buf         *Buffer
	Offset      int
	ModelStride int
	Int         int64
	Float       float64
	// ModelBase marks the scalar that receives the index of the first model a launch covers
	// (0 when batched, m when launched for model m alone); kernels that draw random numbers
	// use it so both strategies draw the same numbers.
	ModelBase bool
}

func (a LaunchArg) sigType() string {
	switch a.Kind {
	case PtrArg:
		return "*" + tritonDType(a.Buf.DType)
	case FloatArg:
		return "fp32"
	}
	if a.Int > 1<<31-1 || a.Int < -(1<<31) {
		return "i64"
	}
	return "i32"
}

func (a LaunchArg) String() string {
	switch a.Kind {
	case PtrArg:
		s := fmt.Sprintf("%s=%s", a.Name, a.Buf)
		if a.Offset != 0 {
			s += fmt.Sprintf("@%d", a.Offset)
		}
		if a.ModelStride == 0 {
			s += "(shared)"
		} else {
			s += fmt.Sprintf("(+%d/model)", a.ModelStride)
		}
		return s
	case FloatArg:
		return fmt.Sprintf("%s=%g", a.Name, a.Float)
	}
	if a.ModelBase {
		return a.Name + "=model_base"
	}
	return fmt.Sprintf("%s=%d", a.Name, a.Int)
}

// KernelSource is one rendered kernel and its specialization.
type KernelSource struct {
	Template  string // e.g. "matmul.py"
	Source    jit.Source
	Consts    map[string]any
	NumWarps  int
	NumStages int // 0: the backend's default
}

// Launch is one step of a plan: a kernel over a grid for all models (batched, fused) or for
// each model in turn (sequential).
type Launch struct {
	Index     int
	Kernel    *KernelSource
	Grid      [3]int // for all models; Grid[ModelAxis] == N
	ModelAxis int
	Args      []LaunchArg
	Nodes     []string // graph nodes served
	Ops       []string // their ops, in order
	Strategy  string
	Reason    string
	// Candidates lists the strategies that were considered.
	Candidates []string
	// Tunables are the kernel's tile sizes, num_warps and (pipelined dots) num_stages as chosen (nil when its family has
	// none); TunablesID names them as in candidate ids, e.g. "bm32-bn64-bk32-w4".
	Tunables   Tunables
	TunablesID string
	// Prepare marks a launch whose inputs are only parameters (and constants, and the
	// outputs of earlier prepare launches), e.g. a conv weight relayout: package runner runs it
	// once after uploading the weights, never in Run.
	Prepare bool
	// NoIntSpecialization: Options.NoIntSpecialization (Spec leaves integer facts out).
	NoIntSpecialization bool
}

// Spec is the jit specialization of the launch's kernel.
func (l *Launch) Spec() jit.Spec {
	sig := map[string]string{}
	for _, a := range l.Args {
		sig[a.Name] = a.sigType()
	}
	var align, ones []string
	for _, a := range l.Args {
		if a.Kind == IntArg && l.NoIntSpecialization {
			continue
		}
		// launched per model, model m's pointer is m model strides further
		perModel := l.Strategy == Sequential && l.Grid[l.ModelAxis] > 1
		if a.aligned16(perModel) {
			align = append(align, a.Name)
		}
		if a.Kind == IntArg && !a.ModelBase && a.Int == 1 {
			ones = append(ones, a.Name)
		}
	}
	sort.Strings(align)
	sort.Strings(ones)
	return jit.Spec{Sig: sig, Consts: l.Kernel.Consts, NumWarps: l.Kernel.NumWarps, NumStages: l.Kernel.NumStages, Align16: align, EqualTo1: ones}
}

// aligned16 reports whether every launch passes a multiple of 16 here: for a pointer, its
// address in bytes (every buffer starts 16-byte aligned, device allocations 256-byte; the
// element offset decides, and per model in sequential launches the model stride too); for
// an integer, its value. The PTX backend turns such facts into vector loads and stores.
func (a LaunchArg) aligned16(perModel bool) bool {
	switch a.Kind {
	case PtrArg:
		size := a.Buf.DType.Size()
		return (a.Offset*size)%16 == 0 && (!perModel || (a.ModelStride*size)%16 == 0)
	case IntArg:
		return !a.ModelBase && a.Int%16 == 0
	}
	return false
}

// buffers lists the buffers a launch reads or writes (its pointer arguments).
func (l *Launch) buffers() []*Buffer {
	var out []*Buffer
	for _, a := range l.Args {
		if a.Kind == PtrArg {
			out = append(out, a.Buf)
		}
	}
	return out
}

// Output is one graph output: a dense region of a buffer.
type Output struct {
	Name  string
	View  View // Dense
	Shape []int
}

// Slot is one physical temp buffer shared by temp buffers with disjoint lifetimes.
type Slot struct {
	DType graph.DType
	Elems int
}

// Plan is the lowered graph: buffers, launches in order, outputs.
type Plan struct {
	N        int
	Graph    string
	Buffers  []*Buffer
	Slots    []Slot
	Launches []*Launch
	Outputs  []Output
	Inputs   []*Buffer // by graph input order
	Params   []*Buffer
	// ModelMajor runs the whole plan for model 0, then model 1, ... with single-model
	// launches (--mode sequential).
	ModelMajor bool
	// IndexChecks are the bounds Run checks on integer inputs before launching.
	IndexChecks []IndexCheck
}

// IndexCheck: every value of graph input Input must lie in [0, Limit) (the rows of the table
// node Node looks up). Kernels trust indices; an out-of-range one would read another model's
// rows, so Run refuses it, as PyTorch does.
type IndexCheck struct {
	Input string
	Node  string
	Limit int
}

// Kernels returns the distinct kernel sources of the plan in first-use order.
func (p *Plan) Kernels() []*KernelSource {
	seen := map[*KernelSource]bool{}
	var out []*KernelSource
	for _, l := range p.Launches {
		if !seen[l.Kernel] {
			seen[l.Kernel] = true
			out = append(out, l.Kernel)
		}
	}
	return out
}

func (p *Plan) String() string {
	var sb strings.Builder
	mode := "layer by layer (wide)"
	if p.ModelMajor {
		mode = "model by model (sequential)"
	}
	fmt.Fprintf(&sb, "plan for %s: N=%d, %d launches, %s\n", p.Graph, p.N, len(p.Launches), mode)
	sb.WriteString("inputs:\n")
	for _, b := range p.Inputs {
		fmt.Fprintf(&sb, "  %s %s x %d\n", b, b.DType, b.Elems)
	}
	fmt.Fprintf(&sb, "params: %d buffers, %d elements\n", len(p.Params), sumElems(p.Params))
	temps := 0
	for _, b := range p.Buffers {
		if b.Kind == TempBuffer {
			temps++
		}
	}
	fmt.Fprintf(&sb, "temporaries: %d buffers in %d slots:", temps, len(p.Slots))
	for i, s := range p.Slots {
		fmt.Fprintf(&sb, " s%d=%s x %d", i, s.DType, s.Elems)
	}
	sb.WriteString("\n")
	for _, b := range p.Buffers {
		if b.Kind == TempBuffer {
			fmt.Fprintf(&sb, "  %s -> s%d (%s, %d elements)\n", b, b.Slot, b.Name, b.Elems)
		}
	}
	sb.WriteString("launches:\n")
	for _, l := range p.Launches {
		prepare := ""
		if l.Prepare {
			prepare = " prepare"
		}
		fmt.Fprintf(&sb, "  [%d] %s %s%s grid=%v model_axis=%d nodes=%s\n", l.Index, l.Kernel.Source.Fn, l.Strategy,
			prepare, l.Grid, l.ModelAxis, strings.Join(l.Nodes, ","))
		args := make([]string, len(l.Args))
		for i, a := range l.Args {
			args[i] = a.String()
		}
		fmt.Fprintf(&sb, "      args: %s\n", strings.Join(args, " "))
		if len(l.Kernel.Consts) > 0 {
			fmt.Fprintf(&sb, "      consts: %s\n", formatConsts(l.Kernel.Consts))
		}
		var opts []string // Triton's launch options, where not the defaults
		if w := l.Kernel.NumWarps; w != 0 {
			opts = append(opts, fmt.Sprintf("num_warps=%d", w))
		}
		if s := l.Kernel.NumStages; s != 0 {
			opts = append(opts, fmt.Sprintf("num_stages=%d", s))
		}
		if len(opts) > 0 {
			fmt.Fprintf(&sb, "      launch options: %s\n", strings.Join(opts, " "))
		}
	}
	sb.WriteString("outputs:\n")
	for _, o := range p.Outputs {
		fmt.Fprintf(&sb, "  %s = %s\n", o.Name, o.View)
	}
	return sb.String()
}

func formatConsts(c map[string]any) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, c[k])
	}
	return strings.Join(parts, " ")
}

func sumElems(bs []*Buffer) int {
	n := 0
	for _, b := range bs {
		n += b.Elems
	}
	return n
}

// markPrepare marks the launches that depend on parameters alone (see Launch.Prepare) and
// returns the temp buffers they touch, which must then live for the whole plan. written[i]
// is the buffer launch i's group writes. A launch qualifies when it reads no input, takes
// no model base (kernels that draw random numbers), writes a temp buffer that is no graph
// output and that no other launch writes, and every other temp buffer it touches is the
// output of an earlier prepare launch.
func (p *Plan) markPrepare(written []*Buffer, keep map[*Buffer]bool) map[*Buffer]bool {
	writers := map[*Buffer]int{}
	for _, b := range written {
		writers[b]++
	}
	prepared := map[*Buffer]bool{}
	for i, l := range p.Launches {
		out := written[i]
		ok := out.Kind == TempBuffer && !keep[out] && writers[out] == 1 && !prepared[out]
		for _, a := range l.Args {
			if !ok {
				break
			}
			switch {
			case a.ModelBase:
				ok = false
			case a.Kind != PtrArg || a.Buf == out || a.Buf.Kind == ParamBuffer:
			case a.Buf.Kind == TempBuffer && prepared[a.Buf]:
			default:
				ok = false
			}
		}
		if ok {
			l.Prepare = true
			prepared[out] = true
		}
	}
	return prepared
}

// assignSlots gives every temp buffer a physical slot: a buffer takes a free slot of its
// dtype (the smallest that holds it, else the largest, grown) at its first launch and frees it
// after its last; graph outputs have their own slots and are never freed.
func (p *Plan) assignSlots(keep map[*Buffer]bool) {
	first := map[*Buffer]int{}
	last := map[*Buffer]int{}
	for i, l := range p.Launches {
		for _, b := range l.buffers() {
			if b.Kind != TempBuffer {
				continue
			}
			if _, ok := first[b]; !ok {
				first[b] = i
			}
			last[b] = i
		}
	}
	free := map[graph.DType][]int{}
	p.Slots = nil
	for i, l := range p.Launches {
		for _, b := range l.buffers() {
			if b.Kind != TempBuffer || first[b] != i || b.Slot >= 0 {
				continue
			}
			pool := free[b.DType]
			if keep[b] {
				// outputs get slots of their own: in a model-major run, an earlier temp sharing
				// the slot would be rewritten for the next model over this model's output
				pool = nil
			}
			pick := -1
			for j, s := range pool {
				if p.Slots[s].Elems >= b.Elems && (pick < 0 || p.Slots[s].Elems < p.Slots[pool[pick]].Elems) {
					pick = j
				}
			}
			if pick < 0 && len(pool) > 0 {
				for j, s := range pool {
					if pick < 0 || p.Slots[s].Elems > p.Slots[pool[pick]].Elems {
						pick = j
					}
				}
			}
			if pick >= 0 {
				b.Slot = pool[pick]
				free[b.DType] = append(pool[:pick:pick], pool[pick+1:]...)
				if p.Slots[b.Slot].Elems < b.Elems {
					p.Slots[b.Slot].Elems = b.Elems
				}
			} else {
				b.Slot = len(p.Slots)
				p.Slots = append(p.Slots, Slot{DType: b.DType, Elems: b.Elems})
			}
		}
		seen := map[*Buffer]bool{}
		for _, b := range l.buffers() {
			if b.Kind != TempBuffer || last[b] != i || keep[b] || seen[b] {
				continue
			}
			seen[b] = true
			free[b.DType] = append(free[b.DType], b.Slot)
		}
	}
}

// DeviceDType is the kernel-language type that holds d on a device.
func DeviceDType(d graph.DType) (ir.DType, error) {
	t, ok := ir.ParseDType(tritonDType(d))
	if !ok {
		return ir.Invalid, fmt.Errorf("dtype %s has no device type", d)
	}
	return t, nil
}

func tritonDType(d graph.DType) string {
	switch d {
	case graph.Float32:
		return "fp32"
	case graph.Float16:
		return "fp16"
	case graph.BFloat16:
		return "bf16"
	case graph.Float64:
		return "fp64"
	case graph.Int64:
		return "i64"
	case graph.Int32:
		return "i32"
	case graph.Int16:
		return "i16"
	case graph.Int8:
		return "i8"
	case graph.Uint8:
		return "u8"
	case graph.Bool:
		return "i1"
	}
	return string(d)
}

// planJSON is the machine-readable plan (`widejit kernel dump` writes it as plan.json): what
// an external executor needs to replay the plan with the dumped kernels.
type planJSON struct {
	Graph      string       `json:"graph"`
	N          int          `json:"n"`
	ModelMajor bool         `json:"model_major"`
	Buffers    []bufferJSON `json:"buffers"`
	Slots      []Slot       `json:"slots"`
	Launches   []launchJSON `json:"launches"`
	Outputs    []outputJSON `json:"outputs"`
}

type bufferJSON struct {
	ID    int    `json:"id"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Elems int    `json:"elems"`
	Slot  int    `json:"slot"`
}

type launchJSON struct {
	Index     int            `json:"index"`
	File      string         `json:"file"`
	Fn        string         `json:"fn"`
	Template  string         `json:"template"`
	Consts    map[string]any `json:"consts"`
	Grid      [3]int         `json:"grid"`
	ModelAxis int            `json:"model_axis"`
	Strategy  string         `json:"strategy"`
	Reason    string         `json:"reason"`
	Nodes     []string       `json:"nodes"`
	Args      []argJSON      `json:"args"`
	// Prepare: run once after the weights are uploaded, not on every run.
	Prepare bool `json:"prepare,omitempty"`
	// NumWarps and NumStages: Triton's launch options, when not the defaults (4 and 3).
	NumWarps  int `json:"num_warps,omitempty"`
	NumStages int `json:"num_stages,omitempty"`
}

type argJSON struct {
	Name        string  `json:"name"`
	Kind        string  `json:"kind"` // ptr | int | float
	Buffer      int     `json:"buffer"`
	Offset      int     `json:"offset,omitempty"`
	ModelStride int     `json:"model_stride,omitempty"`
	Int         int64   `json:"int,omitempty"`
	Float       float64 `json:"float,omitempty"`
	ModelBase   bool    `json:"model_base,omitempty"`
}

type outputJSON struct {
	Name   string `json:"name"`
	Buffer int    `json:"buffer"`
	Offset int    `json:"offset"`
	Shape  []int  `json:"shape"`
}

// JSON renders the plan as plan.json.
func (p *Plan) JSON() ([]byte, error) {
	doc := planJSON{Graph: p.Graph, N: p.N, ModelMajor: p.ModelMajor, Slots: p.Slots}
	for _, b := range p.Buffers {
		doc.Buffers = append(doc.Buffers, bufferJSON{b.ID, b.Kind.String(), b.Name, string(b.DType), b.Elems, b.Slot})
	}
	for _, l := range p.Launches {
		lj := launchJSON{Index: l.Index, File: l.Kernel.Source.File, Fn: l.Kernel.Source.Fn, Template: l.Kernel.Template,
			Consts: l.Kernel.Consts, Grid: l.Grid, ModelAxis: l.ModelAxis, Strategy: l.Strategy, Reason: l.Reason, Nodes: l.Nodes, Prepare: l.Prepare,
			NumWarps: l.Kernel.NumWarps, NumStages: l.Kernel.NumStages}
		for _, a := range l.Args {
			aj := argJSON{Name: a.Name}
			switch a.Kind {
			case PtrArg:
				aj.Kind, aj.Buffer, aj.Offset, aj.ModelStride = "ptr", a.Buf.ID, a.Offset, a.ModelStride
			case FloatArg:
				aj.Kind, aj.Float = "float", a.Float
			default:
				aj.Kind, aj.Int, aj.ModelBase = "int", a.Int, a.ModelBase
			}
			lj.Args = append(lj.Args, aj)
		}
		doc.Launches = append(doc.Launches, lj)
	}
	for _, o := range p.Outputs {
		doc.Outputs = append(doc.Outputs, outputJSON{o.Name, o.View.Buf.ID, o.View.Offset, o.Shape})
	}
	return json.MarshalIndent(doc, "", "  ")
}
