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

// CUDA12Dir is where .ci/setup puts CUDA 12.4's ptxas, nvdisasm and cuobjdump (from Debian
// trixie's nvidia-cuda-toolkit), relative to the repository root. They assemble PTX ISA 8.x
// for sm_90a and disassemble cubins to SASS; Debian 12's ptxas 11.8 can do neither.
const CUDA12Dir = ".tools/cuda12/bin"

// FindCUDA12Tool finds CUDA 12's tool name (ptxas, nvdisasm or cuobjdump) at
// <dir>/.tools/cuda12/bin for dir = start and each of its parents; the error says how to get it.
func FindCUDA12Tool(start, name string) (string, error) {
	if p, ok := findUp(start, filepath.Join(CUDA12Dir, name)); ok {
		return p, nil
	}
	return "", fmt.Errorf("CUDA 12.4's %s not found in %s above %s: run bash .ci/setup (extracts it from Debian trixie's nvidia-cuda-toolkit)", name, CUDA12Dir, start)
}

// AssembleCubin is Assemble that also returns the cubin ptxas wrote.
func AssembleCubin(ptxas, arch, text string) ([]byte, *AsmReport, error) {
	var cubin []byte
	rep, err := assemble(ptxas, arch, text, func(path string) error {
		var err error
		cubin, err = os.ReadFile(path)
		return err
	})
	return cubin, rep, err
}

// Disassemble runs cuobjdump -sass on a cubin and returns its text.
func Disassemble(cuobjdump string, cubin []byte) (string, error) {
	dir, err := os.MkdirTemp("", "widejit-sass")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "k.cubin")
	if err := os.WriteFile(in, cubin, 0o644); err != nil {
		return "", err
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(cuobjdump, "-sass", in)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cuobjdump -sass: %v\n%s", err, errOut.String())
	}
	return out.String(), nil
}

// SASSInstr is one SASS instruction: its byte address, predicate guard ("@!P5" or ""),
// opcode with modifiers ("HMMA.16816.F32") and operand text.
type SASSInstr struct {
	Addr     int
	Guard    string
	Opcode   string
	Operands string
}

// SASSFunc is one kernel's disassembly.
type SASSFunc struct {
	Name   string
	Instrs []SASSInstr
}

var (
	sassFuncRe  = regexp.MustCompile(`^\s*Function : (\S+)`)
	sassInstrRe = regexp.MustCompile(`^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);`)
)

// ParseSASS reads cuobjdump -sass output into its functions.
func ParseSASS(text string) []SASSFunc {
	var fns []SASSFunc
	for _, line := range strings.Split(text, "\n") {
		if m := sassFuncRe.FindStringSubmatch(line); m != nil {
			fns = append(fns, SASSFunc{Name: m[1]})
			continue
		}
		m := sassInstrRe.FindStringSubmatch(line)
		if m == nil || len(fns) == 0 {
			continue
		}
		addr, _ := strconv.ParseInt(m[1], 16, 64)
		f := &fns[len(fns)-1]
		f.Instrs = append(f.Instrs, SASSInstr{Addr: int(addr), Guard: strings.TrimSpace(m[2]), Opcode: m[3], Operands: strings.TrimSpace(m[4])})
	}
	return fns
}

// SASSCounts are the counts of one stretch of SASS (a whole kernel or one loop body, each
// instruction counted once: static counts).
type SASSCounts struct {
	Instrs      int     // every instruction but NOPs
	Tensor      int     // tensor-core instructions: HMMA (mma.sync) and HGMMA (wgmma)
	TensorFLOPs int     // their FLOPs, per warp-level instruction
	TF32        int     // tensor-core instructions on TF32 operands
	Barriers    int     // BAR.*
	LDSM        int     // ldmatrix
	LDGSTS      int     // cp.async
	LDG, STG    int     // global loads and stores
	LDS, STS    int     // shared-memory loads and stores (not the never-executed @!PT ones)
	Shuffles    int     // SHFL.*
	Vector128   int     // 16-byte global loads and stores (LDG/STG .128)
	FLOPsPerIns float64 // TensorFLOPs / Instrs
}

// SASSLoop is a loop of the kernel: the instructions from a backward branch's target to the
// branch.
type SASSLoop struct {
	Start, End int // byte addresses of its first and last (the branch) instruction
	SASSCounts
}

// SASSReport is what a kernel's SASS says about how close it can come to the hardware.
type SASSReport struct {
	Name  string
	Whole SASSCounts
	Loops []SASSLoop
	// Main is the index in Loops of the loop with the most tensor FLOPs (else the longest),
	// the K loop of a GEMM; -1 when the kernel has no loop.
	Main int
}

var hgmmaShapeRe = regexp.MustCompile(`^HGMMA\.(\d+)x(\d+)x(\d+)`)

// tensorFLOPs returns the FLOPs of one warp's tensor-core instruction and whether its
// operands are TF32. An HMMA.MNK (e.g. 16816: m16n8k16) is one warp's 2*M*N*K; an HGMMA
// (wgmma) is issued by the four warps of a warpgroup, so each warp's instruction counts a
// quarter of the warpgroup's 2*M*N*K.
func tensorFLOPs(op string) (int, bool, bool) {
	tf32 := strings.Contains(op, ".TF32")
	if m := hgmmaShapeRe.FindStringSubmatch(op); m != nil {
		mm, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		k, _ := strconv.Atoi(m[3])
		return 2 * mm * n * k / 4, tf32, true
	}
	if strings.HasPrefix(op, "HMMA.") {
		shape := strings.SplitN(op, ".", 3)[1]
		mnk := map[string][3]int{"1688": {16, 8, 8}, "16816": {16, 8, 16}, "1684": {16, 8, 4}, "884": {8, 8, 4}}
		if d, ok := mnk[shape]; ok {
			return 2 * d[0] * d[1] * d[2], tf32, true
		}
		return 0, tf32, true
	}
	return 0, false, false
}

func countSASS(ins []SASSInstr) SASSCounts {
	var c SASSCounts
	for _, in := range ins {
		op := in.Opcode
		if op == "NOP" {
			continue
		}
		c.Instrs++
		if in.Guard == "@!PT" {
			// never executes (ptxas pads cp.async sequences with @!PT LDS RZ, [RZ]): it takes
			// an issue slot but touches no memory
			continue
		}
		if fl, tf32, ok := tensorFLOPs(op); ok {
			c.Tensor++
			c.TensorFLOPs += fl
			if tf32 {
				c.TF32++
			}
		}
		base, mods, _ := strings.Cut(op, ".")
		switch base {
		case "BAR":
			c.Barriers++
		case "LDSM":
			c.LDSM++
		case "LDGSTS":
			c.LDGSTS++
		case "LDG":
			c.LDG++
		case "STG":
			c.STG++
		case "LDS":
			c.LDS++
		case "STS":
			c.STS++
		case "SHFL":
			c.Shuffles++
		}
		if (base == "LDG" || base == "STG") && strings.Contains("."+mods+".", ".128.") {
			c.Vector128++
		}
	}
	if c.Instrs > 0 {
		c.FLOPsPerIns = float64(c.TensorFLOPs) / float64(c.Instrs)
	}
	return c
}

var braTargetRe = regexp.MustCompile(`^(?:\S+,\s*)?(?:` + "`" + `\()?[^0-9]*0x([0-9a-f]+)`)

// Analyze counts f's instructions, whole and per loop (a backward branch to an earlier
// address closes a loop; the self-branch that ends every kernel does not).
func Analyze(f SASSFunc) SASSReport {
	rep := SASSReport{Name: f.Name, Whole: countSASS(f.Instrs), Main: -1}
	for i, in := range f.Instrs {
		if !strings.HasPrefix(in.Opcode, "BRA") {
			continue
		}
		m := braTargetRe.FindStringSubmatch(in.Operands)
		if m == nil {
			continue
		}
		target, _ := strconv.ParseInt(m[1], 16, 64)
		if int(target) >= in.Addr {
			continue
		}
		first := 0
		for first < i && f.Instrs[first].Addr < int(target) {
			first++
		}
		rep.Loops = append(rep.Loops, SASSLoop{Start: int(target), End: in.Addr, SASSCounts: countSASS(f.Instrs[first : i+1])})
	}
	for i, l := range rep.Loops {
		if rep.Main < 0 {
			rep.Main = i
			continue
		}
		m := rep.Loops[rep.Main]
		if l.TensorFLOPs > m.TensorFLOPs || (l.TensorFLOPs == m.TensorFLOPs && l.Instrs > m.Instrs) {
			rep.Main = i
		}
	}
	return rep
}

// IssueCeiling is the fraction of the tensor cores' peak that c's instruction mix allows by
// issue rate alone: an SM issues 4 warp-instructions per clock and H100/H200 tensor cores do
// 4096 fp16/bf16 FLOPs per clock per SM (2048 TF32), so every instruction has to carry 1024
// FLOPs (TF32: 512) to keep them busy. Capped at 1.
func IssueCeiling(c SASSCounts) float64 {
	need := 1024.0
	if c.TF32 > 0 && c.TF32 == c.Tensor {
		need = 512
	}
	return min(1, c.FLOPsPerIns/need)
}
