package outputs

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/widejit/widejit/graph/safetensors"
)

// part is one file given to merge.
type part struct {
	path     string
	lo, hi   int
	n        int
	identity string
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
	p := &part{path: path, file: f, identity: meta[metaIdentity], graph: meta["graph"]}
	fail := func(format string, args ...any) (*part, error) {
		f.Close()
		return nil, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if meta[metaModels] == "" || meta[metaN] == "" || p.identity == "" {
		return fail("not the --out file of a widejit run (its metadata lacks %s, %s or %s)", metaModels, metaN, metaIdentity)
	}
	if v := meta[metaVersion]; v != metaFormat {
		return fail("output format %q, this widejit reads %q", v, metaFormat)
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

// Merge checks that the parts at paths tile [0, N) of one graph and writes their outputs
// stacked in model order to out (never over a part); it returns N and the number of outputs.
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
			return 0, 0, err
		}
		parts = append(parts, p)
	}
	ref := parts[0]
	for _, p := range parts[1:] {
		switch {
		case p.identity != ref.identity:
			return 0, 0, fmt.Errorf("%s is foreign: it was computed by another graph or other weights than %s (%s %.16s..., not %.16s...)", p.path, ref.path, metaIdentity, p.identity, ref.identity)
		case p.n != ref.n:
			return 0, 0, fmt.Errorf("%s holds models of N=%d, %s of N=%d", p.path, p.n, ref.path, ref.n)
		}
		if err := sameOutputs(ref, p); err != nil {
			return 0, 0, err
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
			return 0, 0, fmt.Errorf("parts overlap: %s and %s %s", q.path, p.path, what)
		}
		if p.lo > next {
			return 0, 0, fmt.Errorf("models [%d, %d) of %d are missing: no part holds them (the parts hold %s)", next, p.lo, ref.n, describeParts(parts))
		}
		next = p.hi
	}
	if next < ref.n {
		return 0, 0, fmt.Errorf("models [%d, %d) of %d are missing: no part holds them (the parts hold %s)", next, ref.n, ref.n, describeParts(parts))
	}
	var merged []*safetensors.Tensor
	for _, name := range ref.file.Names() {
		rows := make([]*safetensors.Tensor, len(parts))
		for i, p := range parts {
			t, err := p.file.Read(name)
			if err != nil {
				return 0, 0, err
			}
			rows[i] = t
		}
		t, err := safetensors.ConcatRows(name, rows)
		if err != nil {
			return 0, 0, err
		}
		merged = append(merged, t)
	}
	meta := map[string]string{"graph": parts[0].graph, metaModels: fmt.Sprintf("0:%d", ref.n), metaN: strconv.Itoa(ref.n),
		metaIdentity: ref.identity, metaVersion: metaFormat}
	if err := Write("--out", out, paths, func(w io.Writer) error { return safetensors.Encode(w, merged, meta) }); err != nil {
		return 0, 0, err
	}
	return ref.n, len(merged), nil
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
