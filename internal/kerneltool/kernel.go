package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/outputs"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/device"
	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

func init() { register("kernel", newKernelCmd) }

func newKernelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kernel",
		Short: "Run or inspect one Triton-language kernel",
	}
	cmd.AddCommand(newKernelRunCmd(a), newKernelIRCmd(a))
	return cmd
}

func newKernelRunCmd(a *app) *cobra.Command {
	var fn, gridText, inputs, out, device string
	var consts, argv []string
	var numWarps int
	cmd := &cobra.Command{
		Use:   "run FILE.py --fn NAME --grid X[,Y[,Z]] --inputs IN.safetensors --out OUT.safetensors",
		Short: "Run a kernel on tensors from a safetensors file and write them back after the run",
		Long: `Binds each pointer parameter to the tensor of the same name in IN (its dtype gives the
pointer type), scalar parameters to --arg NAME=VALUE (int: i32, or i64 when it does not fit;
float: fp32; true/false: i1), and constexprs to --const NAME=VALUE (int, float, true/false,
a dtype such as tl.float16, else a string). After the run, every bound tensor is written to OUT.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fn == "" || gridText == "" || inputs == "" || out == "" {
				return usagef("kernel run: --fn, --grid, --inputs and --out are required")
			}
			grid, err := parseGrid(gridText)
			if err != nil {
				return err
			}
			cv, err := parseConsts(consts)
			if err != nil {
				return err
			}
			scalars, err := parseKernelArgs(argv)
			if err != nil {
				return err
			}
			text, def, err := readKernel(args[0], fn)
			if err != nil {
				return err
			}
			dev, err := openDevice(a, device)
			if err != nil {
				return err
			}
			defer dev.Close()
			in, err := safetensors.Open(inputs)
			if err != nil {
				return err
			}
			defer in.Close()
			return runKernel(a, dev, kernelRun{
				file: args[0], text: text, def: def, grid: grid, consts: cv, scalars: scalars,
				in: in, out: out, numWarps: numWarps,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&fn, "fn", "", "the @triton.jit function to run")
	f.StringVar(&gridText, "grid", "", "launch grid X[,Y[,Z]]")
	f.StringArrayVar(&consts, "const", nil, "constexpr NAME=VALUE (repeatable)")
	f.StringArrayVar(&argv, "arg", nil, "scalar argument NAME=VALUE (repeatable)")
	f.StringVar(&inputs, "inputs", "", "safetensors file with a tensor per pointer parameter")
	f.StringVar(&out, "out", "", "safetensors file to write the bound tensors to after the run")
	f.IntVar(&numWarps, "num-warps", 4, "warps per program (GPU only; part of the specialization)")
	f.StringVar(&device, "device", "", "device: cpu, cuda or auto (default: the device config value)")
	return cmd
}

func newKernelIRCmd(a *app) *cobra.Command {
	var fn, sigText string
	var consts []string
	cmd := &cobra.Command{
		Use:   "ir FILE.py --fn NAME --sig NAME=*fp32,NAME=i32,... [--const NAME=VALUE]...",
		Short: "Print the specialized tile IR of a kernel",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fn == "" {
				return usagef("kernel ir: --fn is required")
			}
			sig := map[string]string{}
			if sigText != "" {
				for _, item := range strings.Split(sigText, ",") {
					name, typ, ok := strings.Cut(strings.TrimSpace(item), "=")
					if !ok || name == "" || typ == "" {
						return usagef("kernel ir: --sig entry %q: expected NAME=TYPE (e.g. x_ptr=*fp32, n=i32)", item)
					}
					sig[name] = typ
				}
			}
			cv, err := parseConsts(consts)
			if err != nil {
				return err
			}
			text, _, err := readKernel(args[0], fn)
			if err != nil {
				return err
			}
			f, err := triton.Specialize(args[0], text, fn, sig, cv)
			if err != nil {
				return err
			}
			fmt.Fprint(a.stdout, f.String())
			return nil
		},
	}
	cmd.Flags().StringVar(&fn, "fn", "", "the @triton.jit function")
	cmd.Flags().StringVar(&sigText, "sig", "", "runtime parameter types NAME=TYPE,... (*fp32, *fp16, i32, i64, fp32, i1)")
	cmd.Flags().StringArrayVar(&consts, "const", nil, "constexpr NAME=VALUE (repeatable)")
	return cmd
}

// openDevice opens the device named by --device (else the configured one): auto uses the GPU
// when the CUDA driver finds one and the CPU otherwise.
func openDevice(a *app, name string) (jit.Device, error) {
	if name == "" {
		name = a.v.GetString("device")
	}
	if !slices.Contains(device.Kinds, name) && name != "" {
		return nil, usagef("--device %q: expected one of %s", name, strings.Join(device.Kinds, ", "))
	}
	return device.Open(name, a.v.GetInt("threads"))
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
}

func runKernel(a *app, dev jit.Device, r kernelRun) error {
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
			return usagef("kernel run: %s is a constexpr: give it with --const, not --arg", p.Name)
		}
		if _, ok := r.consts[p.Name]; ok && !isConstexprParam(p) {
			return usagef("kernel run: %s is a runtime parameter: give it with --arg or a tensor, not --const", p.Name)
		}
	}
	for name := range r.scalars {
		if !known[name] {
			return usagef("kernel run: --arg %s: kernel %s has no such parameter", name, r.def.Name)
		}
	}
	for name := range r.consts {
		if !known[name] {
			return usagef("kernel run: --const %s: kernel %s has no such parameter", name, r.def.Name)
		}
	}
	for _, p := range r.def.Params {
		if isConstexprParam(p) {
			continue
		}
		if info, ok := r.in.Info(p.Name); ok {
			if _, dup := r.scalars[p.Name]; dup {
				return usagef("kernel run: %s is bound twice: a tensor in %s and --arg", p.Name, r.in.Path())
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
	c := jit.NewCompiler(jit.CompilerOptions{Version: buildVersion()})
	k, err := c.Load(dev, jit.Source{File: r.file, Text: r.text, Fn: r.def.Name},
		jit.Spec{Sig: sig, Consts: r.consts, NumWarps: r.numWarps})
	if err != nil {
		return err
	}
	if err := k.Launch(r.grid, args); err != nil {
		return err
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
		return g, usagef("--grid %q: at most 3 dimensions", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return g, usagef("--grid %q: dimension %d must be a positive integer", s, i)
		}
		g[i] = n
	}
	return g, nil
}

func splitAssign(flag, item string) (string, string, error) {
	name, val, ok := strings.Cut(item, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", "", usagef("--%s %q: expected NAME=VALUE", flag, item)
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
			return nil, usagef("--%s %s given twice", flag, name)
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
		return nil, usagef("--arg %s=%q: expected an int, a float, true or false", name, val)
	})
}
