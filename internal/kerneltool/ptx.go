package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// Adds `--arch sm_80,sm_90` to `widejit kernel dump`: each kernel's PTX is also written, as
// DIR/<kernel>.<arch>.ptx.
func init() { extend("kernel dump", addDumpArch) }

func addDumpArch(_ *app, cmd *cobra.Command) {
	var archList string
	cmd.Flags().StringVar(&archList, "arch", "", "also write each kernel's PTX for these archs (sm_80,sm_90)")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		var archs []string
		if archList != "" {
			for _, s := range strings.Split(archList, ",") {
				s = strings.TrimSpace(s)
				if !ptx.ValidArch(s) {
					return usagef("--arch %q: expected a comma-separated list of %s", s, strings.Join(ptx.Archs, ", "))
				}
				archs = append(archs, s)
			}
		}
		if err := run(c, args); err != nil || len(archs) == 0 {
			return err
		}
		var lf loweringFlags
		fl := c.Flags()
		lf.n, _ = fl.GetInt("n")
		lf.mode, _ = fl.GetString("mode")
		lf.noFusion, _ = fl.GetBool("no-fusion")
		lf.strategy, _ = fl.GetString("strategy")
		lf.dropout, _ = fl.GetString("dropout")
		lf.seed, _ = fl.GetInt64("seed")
		plan, err := lf.lower(args[0])
		if err != nil {
			return err
		}
		dir, _ := fl.GetString("dir")
		n, err := writePlanPTX(plan, dir, archs)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.OutOrStdout(), "wrote %d PTX files to %s (%s)\n", n, dir, strings.Join(archs, ", "))
		return err
	}
}

// writePlanPTX writes the PTX of every distinct kernel of plan for each arch.
func writePlanPTX(plan *lowering.Plan, dir string, archs []string) (int, error) {
	comp := jit.NewCompiler(jit.CompilerOptions{})
	written := 0
	seen := map[*lowering.KernelSource]bool{}
	for _, l := range plan.Launches {
		if seen[l.Kernel] {
			continue
		}
		seen[l.Kernel] = true
		base := strings.TrimSuffix(l.Kernel.Source.File, filepath.Ext(l.Kernel.Source.File))
		for _, arch := range archs {
			a, err := comp.Compile(l.Kernel.Source, l.Spec(), ptx.Target{Arch: arch})
			if err != nil {
				return written, err
			}
			path := filepath.Join(dir, base+"."+arch+".ptx")
			if err := os.WriteFile(path, a.Payload, 0o644); err != nil {
				return written, err
			}
			written++
		}
	}
	return written, nil
}
