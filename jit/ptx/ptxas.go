package ptx

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// FindPtxas looks for ptxas on PATH, then at <dir>/.tools/bin/ptxas for dir = start and each
// of its parents (the repository's .ci/setup installs it there).
func FindPtxas(start string) (string, error) {
	if p, err := exec.LookPath("ptxas"); err == nil {
		return p, nil
	}
	if p, ok := findUp(start, filepath.Join(".tools", "bin", "ptxas")); ok {
		return p, nil
	}
	return "", fmt.Errorf("ptxas not found: run bash .ci/setup (extracts it from Debian's nvidia-cuda-toolkit)")
}

// findUp returns <dir>/rel for the first dir, from start up to the root, where it is a file.
func findUp(start, rel string) (string, bool) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, rel)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// AsmReport is what ptxas -v says about one kernel.
type AsmReport struct {
	Registers   int
	SpillStores int
	SpillLoads  int
	Log         string
}

var (
	regsRe  = regexp.MustCompile(`Used (\d+) registers`)
	spillRe = regexp.MustCompile(`(\d+) bytes spill stores, (\d+) bytes spill loads`)
)

// Assemble runs ptxas -v for arch on PTX text and returns its report; an assembler error
// comes back with ptxas's messages.
func Assemble(ptxas, arch, text string) (*AsmReport, error) {
	return assemble(ptxas, arch, text, nil)
}

// assemble runs ptxas -v and, when cubin is not nil, hands it the path of the cubin written.
func assemble(ptxas, arch, text string, cubin func(path string) error) (*AsmReport, error) {
	dir, err := os.MkdirTemp("", "widejit-ptxas")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "k.ptx")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "k.cubin")
	cmd := exec.Command(ptxas, "-v", "-arch="+arch, "-o", out, in)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ptxas -arch=%s: %v\n%s", arch, err, log.String())
	}
	rep := &AsmReport{Log: log.String()}
	if m := regsRe.FindStringSubmatch(rep.Log); m != nil {
		rep.Registers, _ = strconv.Atoi(m[1])
	}
	if m := spillRe.FindStringSubmatch(rep.Log); m != nil {
		rep.SpillStores, _ = strconv.Atoi(m[1])
		rep.SpillLoads, _ = strconv.Atoi(m[2])
	}
	if cubin != nil {
		if err := cubin(out); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// MergeModules joins PTX modules of this package into one (entries renamed NAME_m<i>), so
// one ptxas run can check many kernels; the shared-memory declaration appears once.
func MergeModules(arch string, modules []string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, ".version %s\n.target %s\n.address_size 64\n\n.extern .shared .align 16 .b8 wj_smem[];\n\n", ISA, arch)
	entryRe := regexp.MustCompile(`\.visible \.entry ([A-Za-z_$][A-Za-z0-9_$]*)\(`)
	for i, m := range modules {
		match := entryRe.FindStringSubmatchIndex(m)
		if match == nil {
			continue
		}
		name := m[match[2]:match[3]]
		body := m[match[0]:]
		renamed := fmt.Sprintf("%s_m%d", name, i)
		body = strings.ReplaceAll(body, ".entry "+name+"(", ".entry "+renamed+"(")
		body = strings.ReplaceAll(body, name+"_param_", renamed+"_param_")
		b.WriteString(body)
		b.WriteByte('\n')
	}
	return b.String()
}
