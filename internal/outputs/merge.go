package outputs

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/errkind"
)

// part is one file given to merge.
type part struct {
	path     string
	lo, hi   int
	n        int
	identity string
	inputs   string
	graph    string
	file     *safetensors.File
}

// openPart opens path and reads what its metadata says it holds.
func openPart(path string) (*part, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	meta := f.Metadata()
	p := &part{path: path, file: f, identity: meta[metaIdentity], inputs: meta[metaInputs], graph: meta["graph"]}
	fail := func(format string, args ...any) (*part, error) {
		f.Close()
		return nil, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if meta[metaModels] == "" || meta[metaN] == "" || p.identity == "" {
		return fail("not the --out file of a widejit run (its metadata lacks %s, %s or %s)", metaModels, metaN, metaIdentity)
	}
	if v := meta[metaVersion]; v != metaFormat {
		return fail("output format %q, this widejit reads %q (format 2 records the inputs: run the part again)", v, metaFormat)
	}
	if p.inputs == "" {
		return fail("its metadata lacks %s, the identity of the inputs it was computed on", metaInputs)
	}
	los, his, ok := strings.Cut(meta[metaModels], ":")
	lo, err1 := strconv.Atoi(los)
	hi, err2 := strconv.Atoi(his)
	n, err3 := strconv.Atoi(meta[metaN])
	if !ok || err1 != nil || err2 != nil || err3 != nil || lo < 0 || hi <= lo || hi > n {
		return fail("bad metadata: %s=%q of %s=%q", metaModels, meta[metaModels], metaN, meta[metaN])
	}
	p.lo, p.hi, p.n = lo, hi, n
	for _, name := range f.Names() {
		info, _ := f.Info(name)
		if len(info.Shape) == 0 || info.Shape[0] != hi-lo {
			return fail("output %q has shape %v, but the file says it holds %d models [%d, %d)", name, info.Shape, hi-lo, lo, hi)
		}
	}
	return p, nil
}

// Merge checks that the parts at paths tile [0, N) of one graph, computed on the same
// inputs, and writes their outputs stacked in model order to out (never over a part); it
// returns N and the number of outputs. The parts are copied into out piece by piece, never
// held in memory. A part that does not fit the others is errkind.Input.
func Merge(paths []string, out string) (int, int, error) {
	if err := RefuseInput("--out", out, paths); err != nil {
		return 0, 0, err
	}
	var parts []*part
	defer func() {
		for _, p := range parts {
			p.file.Close()
		}
	}()
	for _, path := range paths {
		p, err := openPart(path)
		if err != nil {
			return 0, 0, errkind.Input{Err: err}
		}
		parts = append(parts, p)
	}
	if err := checkParts(parts); err != nil {
		return 0, 0, errkind.Input{Err: err}
	}
	ref := parts[0] // the first models'
	var entries []safetensors.Entry
	for _, name := range ref.file.Names() {
		info, _ := ref.file.Info(name)
		entries = append(entries, safetensors.Entry{Name: name, DType: info.DType, Shape: append([]int{ref.n}, info.Shape[1:]...)})
	}
	meta := map[string]string{"graph": ref.graph, metaModels: fmt.Sprintf("0:%d", ref.n), metaN: strconv.Itoa(ref.n),
		metaIdentity: ref.identity, metaInputs: ref.inputs, metaVersion: metaFormat}
	err := Write("--out", out, paths, func(w io.Writer) error {
		return safetensors.EncodeStream(w, entries, meta, func(w io.Writer, e safetensors.Entry) error {
			for _, p := range parts { // in model order: each part's rows follow the previous part's
				r, err := p.file.Section(e.Name)
				if err != nil {
					return err
				}
				if _, err := io.Copy(w, r); err != nil {
					return fmt.Errorf("%s: output %q: %w", p.path, e.Name, err)
				}
			}
			return nil
		})
	})
	if err != nil {
		return 0, 0, err
	}
	return ref.n, len(entries), nil
}

// checkParts checks that parts hold the same outputs of one graph and its weights, computed
// on the same inputs, and tile the models [0, N) without overlap; it sorts them by model.
func checkParts(parts []*part) error {
	ref := parts[0]
	for _, p := range parts[1:] {
		switch {
		case p.identity != ref.identity:
			return fmt.Errorf("%s is foreign: it was computed by another graph or other weights than %s (%s %.16s..., not %.16s...)", p.path, ref.path, metaIdentity, p.identity, ref.identity)
		case p.inputs != ref.inputs:
			return fmt.Errorf("%s and %s were computed on different inputs (%s: %s; %s: %s): their models' outputs do not belong together", ref.path, p.path, ref.path, ref.inputs, p.path, p.inputs)
		case p.n != ref.n:
			return fmt.Errorf("%s holds models of N=%d, %s of N=%d", p.path, p.n, ref.path, ref.n)
		}
		if err := sameOutputs(ref, p); err != nil {
			return err
		}
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].lo < parts[j].lo })
	next := 0
	for i, p := range parts {
		if i > 0 && p.lo < parts[i-1].hi {
			q := parts[i-1]
			what := fmt.Sprintf("both hold models [%d, %d)", p.lo, min(p.hi, q.hi))
			if st1, err1 := os.Stat(p.path); err1 == nil {
				if st2, err2 := os.Stat(q.path); err2 == nil && os.SameFile(st1, st2) {
					what = "are the same file"
				}
			}
			return fmt.Errorf("parts overlap: %s and %s %s", q.path, p.path, what)
		}
		if p.lo > next {
			return fmt.Errorf("models [%d, %d) of %d are missing: no part holds them (the parts hold %s)", next, p.lo, ref.n, describeParts(parts))
		}
		next = p.hi
	}
	if next < ref.n {
		return fmt.Errorf("models [%d, %d) of %d are missing: no part holds them (the parts hold %s)", next, ref.n, ref.n, describeParts(parts))
	}
	return nil
}

// sameOutputs checks that p holds the outputs of ref, with the same dtypes and per-model
// shapes.
func sameOutputs(ref, p *part) error {
	a, b := ref.file.Names(), p.file.Names()
	if strings.Join(a, ",") != strings.Join(b, ",") {
		return fmt.Errorf("%s holds outputs %v, %s holds %v", p.path, b, ref.path, a)
	}
	for _, name := range a {
		x, _ := ref.file.Info(name)
		y, _ := p.file.Info(name)
		if x.DType != y.DType || fmt.Sprint(x.Shape[1:]) != fmt.Sprint(y.Shape[1:]) {
			return fmt.Errorf("%s: output %q is %s[models, %s], %s has %s[models, %s]", p.path, name, y.DType, dims(y.Shape[1:]), ref.path, x.DType, dims(x.Shape[1:]))
		}
	}
	return nil
}

func dims(s []int) string { return strings.Trim(strings.ReplaceAll(fmt.Sprint(s), " ", ","), "[]") }

func describeParts(parts []*part) string {
	var s []string
	for _, p := range parts {
		s = append(s, fmt.Sprintf("[%d, %d) in %s", p.lo, p.hi, p.path))
	}
	return strings.Join(s, ", ")
}
