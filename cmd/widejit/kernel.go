package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/config"
	"github.com/widejit/widejit/internal/kerneltool"
)

func newKernelCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kernel",
		Short: "Run or inspect one Triton-language kernel",
	}
	cmd.AddCommand(newKernelRunCmd(a), newKernelIRCmd(a), newKernelDumpCmd(a))
	return cmd
}

func newKernelRunCmd(a *app) *cobra.Command {
	var r kerneltool.Run
	cmd := &cobra.Command{
		Use:   "run FILE.py --fn NAME --grid X[,Y[,Z]] --inputs IN.safetensors --out OUT.safetensors",
		Short: "Run a kernel on tensors from a safetensors file and write them back after the run",
		Long: `Binds each pointer parameter to the tensor of the same name in IN (its dtype gives the
pointer type), scalar parameters to --arg NAME=VALUE (int: i32, or i64 when it does not fit;
float: fp32; true/false: i1), and constexprs to --const NAME=VALUE (int, float, true/false,
a dtype such as tl.float16, else a string). After the run, every bound tensor is written to OUT.
A launch that takes longer than --launch-timeout (WIDEJIT_LAUNCH_TIMEOUT, config
launch_timeout) is stopped with an error naming the kernel, and OUT is not written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.File, r.Threads, r.CompilerVersion = args[0], a.v.GetInt("threads"), buildVersion()
			// --launch-timeout, WIDEJIT_LAUNCH_TIMEOUT or the config file (checked by loadConfig)
			r.LaunchTimeout, _ = time.ParseDuration(a.v.GetString("launch_timeout"))
			opts, err := config.BackendOptions(a.v)
			if err != nil {
				return usagef("%v", err)
			}
			r.BackendOptions = opts
			if r.Device == "" {
				r.Device = a.v.GetString("device")
			}
			return r.Do()
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Fn, "fn", "", "the @triton.jit function to run")
	f.StringVar(&r.Grid, "grid", "", "launch grid X[,Y[,Z]]")
	f.StringArrayVar(&r.Consts, "const", nil, "constexpr NAME=VALUE (repeatable)")
	f.StringArrayVar(&r.Args, "arg", nil, "scalar argument NAME=VALUE (repeatable)")
	f.StringVar(&r.Inputs, "inputs", "", "safetensors file with a tensor per pointer parameter")
	f.StringVar(&r.Out, "out", "", "safetensors file to write the bound tensors to after the run")
	f.IntVar(&r.NumWarps, "num-warps", 4, "warps per program (GPU only; part of the specialization)")
	f.IntVar(&r.NumStages, "num-stages", 0, "depth of the cp.async pipeline of K loops on tensor cores (GPU only; 0: the kernel's num_stages constexpr, else 3; part of the specialization)")
	f.StringVar(&r.Device, "device", "", "device: auto or a backend's name, e.g. cpu, cuda (default: the device config value)")
	f.String("launch-timeout", "0s", "stop the kernel when its launch takes longer, naming it (0: no limit; config launch_timeout)")
	return cmd
}

func newKernelIRCmd(a *app) *cobra.Command {
	var fn, sig string
	var consts []string
	cmd := &cobra.Command{
		Use:   "ir FILE.py --fn NAME --sig NAME=*fp32,NAME=i32,... [--const NAME=VALUE]...",
		Short: "Print the specialized tile IR of a kernel",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ir, err := kerneltool.IR(args[0], fn, sig, consts)
			if err == nil {
				_, err = fmt.Fprint(a.stdout, ir)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&fn, "fn", "", "the @triton.jit function")
	cmd.Flags().StringVar(&sig, "sig", "", "runtime parameter types NAME=TYPE,... (*fp32, *fp16, i32, i64, fp32, i1)")
	cmd.Flags().StringArrayVar(&consts, "const", nil, "constexpr NAME=VALUE (repeatable)")
	return cmd
}

func newKernelDumpCmd(a *app) *cobra.Command {
	var f planFlags
	var dir, archList string
	cmd := &cobra.Command{
		Use:   "dump GRAPH.json --dir DIR",
		Short: "Write every kernel a graph needs (.py), its plan (plan.txt) and plan.json",
		Long: `Lowers GRAPH.json and writes into DIR every rendered kernel as <name>.py (standalone Triton
kernels), the readable plan as plan.txt and the machine-readable plan as plan.json (buffers,
launches with grids and arguments, outputs).

Without --device the plan is the generic GPU plan (the one --arch compiles to PTX); with
--device cpu, cuda or auto, the plan a run on that device would use (its tiles, layouts and
recorded decisions: the CPU's differ from a GPU's).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			archs, err := kerneltool.ParseArchs(archList)
			if err != nil {
				return err
			}
			if dir == "" {
				return usagef("kernel dump: --dir is required")
			}
			f.AllowOutsidePaths = a.v.GetBool("allow_outside_paths")
			f.Float32MatmulPrecision = a.v.GetString("float32_matmul_precision")
			f.NoIntSpecialization = a.v.GetBool("no_int_specialization")
			plan, err := f.Lower(args[0])
			if cmd.Flags().Changed("device") {
				if len(archs) > 0 {
					return usagef("kernel dump: --arch compiles the generic GPU plan; leave --device out")
				}
				plan, _, err = engineConfig(a, nil).Plan(cmd.Context(), args[0], f.PlanOptions)
			}
			if err != nil {
				return err
			}
			files, err := plan.WriteDump(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %d files to %s (%d kernels, %d launches)\n", len(files), dir, len(plan.Kernels()), len(plan.Launches))
			if len(archs) == 0 {
				return nil
			}
			n, err := kerneltool.WritePTX(plan, dir, archs)
			if err == nil {
				_, err = fmt.Fprintf(a.stdout, "wrote %d PTX files to %s (%s)\n", n, dir, strings.Join(archs, ", "))
			}
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&dir, "dir", "", "output directory")
	cmd.Flags().StringVar(&archList, "arch", "", "also write each kernel's PTX for these archs (sm_80,sm_90,sm_90a; sm_90a: Hopper only, wgmma K loops)")
	cmd.Flags().String("device", "", "plan for this device as a run would: auto | cpu | cuda (default: the generic GPU plan)")
	return cmd
}
