package kerneltool

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// ParseArchs reads `kernel dump --arch`: a comma-separated list of PTX archs (sm_80,sm_90,sm_90a);
// "" is none.
func ParseArchs(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var archs []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !ptx.ValidArch(s) {
			return nil, errkind.Usagef("--arch %q: expected a comma-separated list of %s", s, strings.Join(ptx.AllArchs, ", "))
		}
		archs = append(archs, s)
	}
	return archs, nil
}

// WritePTX writes the PTX of every distinct kernel of plan for each arch, as
// DIR/<kernel>.<arch>.ptx; it returns how many files it wrote.
func WritePTX(plan *lowering.Plan, dir string, archs []string) (int, error) {
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
