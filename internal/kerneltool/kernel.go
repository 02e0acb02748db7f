package kerneltool

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/internal/outputs"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/runner"
	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

// Run is one `widejit kernel run`: the flags as given.
type Run struct {
	File, Fn        string   // the kernel file and its @triton.jit function
	Grid            string   // X[,Y[,Z]]
	Consts, Args    []string // NAME=VALUE: constexprs and scalar arguments
	Inputs, Out     string   // safetensors files: a tensor per pointer parameter; the tensors after the run
	NumWarps        int
	NumStages       int
	Device          string // auto or a registered backend's name
	Threads         int    // CPU executor workers (0: all cores)
	BackendOptions  map[string]string
	CompilerVersion string // names this build in the (in-memory) compiler's keys
	// LaunchTimeout stops the launch when it takes longer (0: no limit), as in a run
	// (runner.Launch).
	LaunchTimeout time.Duration
}

// Do checks the flags, binds every parameter, runs the kernel once on the device and writes
// every bound tensor to Out. Errors in the flags or the binding are errkind.Usage.
func (r Run) Do() error {
	if r.Fn == "" || r.Grid == "" || r.Inputs == "" || r.Out == "" {
		return errkind.Usagef("kernel run: --fn, --grid, --inputs and --out are required")
	}
	grid, err := parseGrid(r.Grid)
	if err != nil {
		return err
	}
	cv, err := parseConsts(r.Consts)
	if err != nil {
		return err
	}
	scalars, err := parseKernelArgs(r.Args)
	if err != nil {
		return err
	}
	text, def, err := readKernel(r.File, r.Fn)
	if err != nil {
		return err
	}
	dev, err := engine.OpenDevice(r.Device, r.Threads, r.BackendOptions)
	if err != nil {
		return err
	}
	defer dev.Close()
	in, err := safetensors.Open(r.Inputs)
	if err != nil {
		return err
	}
	defer in.Close()
	return runKernel(dev, kernelRun{
		file: r.File, text: text, def: def, grid: grid, consts: cv, scalars: scalars,
		in: in, out: r.Out, numWarps: r.NumWarps, numStages: r.NumStages, version: r.CompilerVersion, timeout: r.LaunchTimeout, backendOptions: r.BackendOptions,
	})
}

// IR is `widejit kernel ir`: the tile IR of fn in file, specialized for sig (NAME=TYPE,...)
// and consts (NAME=VALUE).
func IR(file, fn, sig string, consts []string) (string, error) {
	if fn == "" {
		return "", errkind.Usagef("kernel ir: --fn is required")
	}
	types := map[string]string{}
	if sig != "" {
		for _, item := range strings.Split(sig, ",") {
			name, typ, ok := strings.Cut(strings.TrimSpace(item), "=")
			if !ok || name == "" || typ == "" {
				return "", errkind.Usagef("kernel ir: --sig entry %q: expected NAME=TYPE (e.g. x_ptr=*fp32, n=i32)", item)
			}
			types[name] = typ
		}
	}
	cv, err := parseConsts(consts)
	if err != nil {
		return "", err
	}
	text, _, err := readKernel(file, fn)
	if err != nil {
		return "", err
	}
	f, err := triton.Specialize(file, text, fn, types, cv)
	if err != nil {
		return "", err
	}
	return f.String(), nil
}

// readKernel reads the file and finds fn's definition (for its parameter list).
func readKernel(path, fn string) (string, *syntax.FuncDef, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	file, err := syntax.ParseFile(path, src)
	if err != nil {
		return "", nil, err
	}
	var names []string
	for _, d := range file.Funcs {
		if d.Name == fn {
			return string(src), d, nil
		}
		names = append(names, d.Name)
	}
	return "", nil, fmt.Errorf("%s: no function %q (functions: %s)", path, fn, strings.Join(names, ", "))
}

func isConstexprParam(p *syntax.Param) bool {
	if p.Annotation == nil {
		return false
	}
	ann := syntax.Format(p.Annotation)
	return ann == "tl.constexpr" || ann == "constexpr" || ann == "triton.language.constexpr"
}

type kernelRun struct {
	file, text string
	def        *syntax.FuncDef
	grid       [3]int
	consts     map[string]any
	scalars    map[string]any
	in         *safetensors.File
	out        string
	numWarps   int
	numStages  int
	version    string
	timeout    time.Duration
	// backendOptions are the device's backend's, part of the compiler's keys.
	backendOptions map[string]string
}

func runKernel(dev jit.Device, r kernelRun) error {
	sig := map[string]string{}
	var args []jit.Arg
	type bound struct {
		t   *safetensors.Tensor
		buf jit.Buffer
	}
	var tensors []bound
	known := map[string]bool{}
	for _, p := range r.def.Params {
		known[p.Name] = true
		if _, ok := r.scalars[p.Name]; ok && isConstexprParam(p) {
			return errkind.Usagef("kernel run: %s is a constexpr: give it with --const, not --arg", p.Name)
		}
		if _, ok := r.consts[p.Name]; ok && !isConstexprParam(p) {
			return errkind.Usagef("kernel run: %s is a runtime parameter: give it with --arg or a tensor, not --const", p.Name)
		}
	}
	for name := range r.scalars {
		if !known[name] {
			return errkind.Usagef("kernel run: --arg %s: kernel %s has no such parameter", name, r.def.Name)
		}
	}
	for name := range r.consts {
		if !known[name] {
			return errkind.Usagef("kernel run: --const %s: kernel %s has no such parameter", name, r.def.Name)
		}
	}
	for _, p := range r.def.Params {
		if isConstexprParam(p) {
			continue
		}
		if info, ok := r.in.Info(p.Name); ok {
			if _, dup := r.scalars[p.Name]; dup {
				return errkind.Usagef("kernel run: %s is bound twice: a tensor in %s and --arg", p.Name, r.in.Path())
			}
			dt, err := irDType(info.DType)
			if err != nil {
				return fmt.Errorf("tensor %s: %w", p.Name, err)
			}
			t, err := r.in.Read(p.Name)
			if err != nil {
				return err
			}
			b, err := dev.Alloc(dt, t.Numel())
			if err != nil {
				return err
			}
			defer dev.Free(b)
			if err := dev.Upload(b, t.Data); err != nil {
				return err
			}
			sig[p.Name] = "*" + dt.String()
			args = append(args, jit.Arg{Buf: b})
			tensors = append(tensors, bound{t, b})
			continue
		}
		v, ok := r.scalars[p.Name]
		if !ok {
			return fmt.Errorf("%s: kernel %s: parameter %s is not bound: no tensor %q in %s and no --arg %s=VALUE",
				r.file, r.def.Name, p.Name, p.Name, r.in.Path(), p.Name)
		}
		switch x := v.(type) {
		case int64:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				sig[p.Name] = "i32"
			} else {
				sig[p.Name] = "i64"
			}
		case float64:
			sig[p.Name] = "fp32"
		case bool:
			sig[p.Name] = "i1"
		}
		args = append(args, jit.Arg{Scalar: v})
	}
	c := jit.NewCompiler(jit.CompilerOptions{Version: r.version, BackendOptions: r.backendOptions})
	k, err := c.Load(dev, jit.Source{File: r.file, Text: r.text, Fn: r.def.Name},
		jit.Spec{Sig: sig, Consts: r.consts, NumWarps: r.numWarps, NumStages: r.numStages})
	if err != nil {
		return err
	}
	if _, err := runner.Launch(context.Background(), dev, k, r.grid, args, r.timeout); err != nil {
		return fmt.Errorf("%s: %w", r.file, err)
	}
	if err := dev.Sync(); err != nil {
		return err
	}
	var outs []*safetensors.Tensor
	for _, b := range tensors {
		data := make([]byte, len(b.t.Data))
		if err := dev.Download(b.buf, data); err != nil {
			return err
		}
		outs = append(outs, &safetensors.Tensor{Name: b.t.Name, DType: b.t.DType, Shape: b.t.Shape, Data: data})
	}
	inputs := []string{r.file}
	if r.in != nil {
		inputs = append(inputs, r.in.Path())
	}
	return outputs.Write("--out", r.out, inputs, func(w io.Writer) error { return safetensors.Encode(w, outs, nil) })
}

func irDType(d safetensors.DType) (ir.DType, error) {
	switch d {
	case safetensors.F32:
		return ir.F32, nil
	case safetensors.F16:
		return ir.F16, nil
	case safetensors.BF16:
		return ir.BF16, nil
	case safetensors.F64:
		return ir.F64, nil
	case safetensors.I64:
		return ir.I64, nil
	case safetensors.I32:
		return ir.I32, nil
	case safetensors.I16:
		return ir.I16, nil
	case safetensors.I8:
		return ir.I8, nil
	case safetensors.U8:
		return ir.U8, nil
	case safetensors.BOOL:
		return ir.I1, nil
	}
	return ir.Invalid, fmt.Errorf("dtype %s has no kernel pointer type", d)
}

func parseGrid(s string) ([3]int, error) {
	g := [3]int{1, 1, 1}
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return g, errkind.Usagef("--grid %q: at most 3 dimensions", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return g, errkind.Usagef("--grid %q: dimension %d must be a positive integer", s, i)
		}
		g[i] = n
	}
	return g, nil
}

func splitAssign(flag, item string) (string, string, error) {
	name, val, ok := strings.Cut(item, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", "", errkind.Usagef("--%s %q: expected NAME=VALUE", flag, item)
	}
	return name, strings.TrimSpace(val), nil
}

// parseAssignments reads NAME=VALUE items of --flag into a map, each VALUE through parse.
func parseAssignments(flag string, items []string, parse func(name, val string) (any, error)) (map[string]any, error) {
	out := map[string]any{}
	for _, item := range items {
		name, val, err := splitAssign(flag, item)
		if err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, errkind.Usagef("--%s %s given twice", flag, name)
		}
		if out[name], err = parse(name, val); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseScalar reads an int64, a float64 or a bool (true/True, false/False).
func parseScalar(val string) (any, bool) {
	if n, err := strconv.ParseInt(val, 0, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(val, 64); err == nil {
		return f, true
	}
	switch val {
	case "true", "True":
		return true, true
	case "false", "False":
		return false, true
	}
	return nil, false
}

// parseConsts reads constexprs: int, float, true/false, a dtype (tl.float16, fp16), None,
// else a string (quotes stripped).
func parseConsts(items []string) (map[string]any, error) {
	return parseAssignments("const", items, func(_, val string) (any, error) {
		if v, ok := parseScalar(val); ok {
			return v, nil
		}
		if val == "None" {
			return nil, nil
		}
		if d, ok := ir.ParseDType(val); ok {
			return d, nil
		}
		return strings.Trim(val, `"'`), nil
	})
}

// parseKernelArgs reads scalar arguments: int64, float64 or bool.
func parseKernelArgs(items []string) (map[string]any, error) {
	return parseAssignments("arg", items, func(name, val string) (any, error) {
		if v, ok := parseScalar(val); ok {
			return v, nil
		}
		return nil, errkind.Usagef("--arg %s=%q: expected an int, a float, true or false", name, val)
	})
}
