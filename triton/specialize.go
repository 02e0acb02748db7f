package triton

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

// Specialize parses text (file names it in positions), finds the @triton.jit function fn and
// specializes it with the runtime parameter types sig ("*fp32", "i32", ...) and the constexpr
// values consts (int64, float64, bool, string, ir.DType, nil, []any), returning verified,
// typed tile IR. Errors are *Error: FILE:LINE:COL, the message and the constexprs in force
// (for a parse failure, Syntax holds the parser's full error list).
func Specialize(file, text, fn string, sig map[string]string, consts map[string]any) (*ir.Func, error) {
	return SpecializeWith(Options{}, file, text, fn, sig, consts)
}

// Options tune a specialization.
type Options struct {
	// StaticPrint receives tl.static_print output; nil means os.Stderr.
	StaticPrint io.Writer
	// CSE merges identical pure instructions (repeated constants, splats, index arithmetic,
	// Philox streams computed twice). Off by default for now: downstream golden tests (PTX)
	// were recorded without it.
	CSE bool
}

// SpecializeWith is Specialize with options.
func SpecializeWith(opts Options, file, text, fn string, sig map[string]string, consts map[string]any) (f *ir.Func, err error) {
	u, err := parseCached(file, text)
	if err != nil {
		return nil, err
	}
	def := u.funcs[fn]
	if def == nil {
		return nil, &Error{Pos: ir.Pos{File: file}, Msg: fmt.Sprintf("no function %q in the file (functions: %s)", fn, strings.Join(u.names, ", "))}
	}
	s := &spec{
		f:       &ir.Func{Name: fn, File: file},
		unit:    u,
		out:     opts.StaticPrint,
		globals: map[*unit]map[string]value{},
	}
	if s.out == nil {
		s.out = os.Stderr
	}
	s.f.Body = &ir.Block{}
	s.blk = s.f.Body
	s.pos = toPos(def.Pos())
	defer func() {
		if r := recover(); r != nil {
			f = nil
			if b, ok := r.(bailout); ok {
				err = b.err
				return
			}
			err = &Error{Pos: s.pos, Msg: fmt.Sprintf("panic: %v\n%s", r, debug.Stack()), Consts: s.consts, Internal: true}
		}
	}()
	s.bindKernel(def, sig, consts)
	s.runFunc(def, u)
	if opts.CSE {
		eliminateCommonSubexpressions(s.f)
	}
	removeDeadCode(s.f)
	if verr := ir.Verify(s.f); verr != nil {
		pos := s.pos
		if ve, ok := verr.(*ir.VerifyError); ok && ve.Pos.Line > 0 {
			pos = ve.Pos
		}
		return nil, &Error{Pos: pos, Msg: "IR verification failed: " + verr.Error(), Consts: s.consts, Internal: true}
	}
	return s.f, nil
}

func toPos(p syntax.Pos) ir.Pos { return ir.Pos{File: p.File, Line: p.Line, Col: p.Col} }

// spec is the state of one specialization: the function being built, the insertion block, the
// current source position (stamped on every instruction) and the interpreter's frames.
type spec struct {
	f       *ir.Func
	blk     *ir.Block
	pos     ir.Pos
	consts  string
	out     io.Writer
	unit    *unit
	fr      *frame
	depth   int
	regions int // runtime if/for/while bodies open around the current statement
	dry     int // > 0 while dry-running a loop body to find loop-carried names
	steps   int // statements executed, bounded by maxSteps
	emitted int // instructions emitted, bounded by maxInstrs
	globals map[*unit]map[string]value
	inGlob  map[string]bool
}

// frame is one function activation (the kernel or an inlined helper).
type frame struct {
	vars     map[string]value
	order    []string // names in first-assignment order, for deterministic loop-carried lists
	unit     *unit
	ret      value
	returned bool
	loops    int // enclosing dynamic loops
	dynIfs   int // enclosing dynamic ifs
}

func (fr *frame) set(name string, v value) {
	if _, ok := fr.vars[name]; !ok {
		fr.order = append(fr.order, name)
	}
	fr.vars[name] = v
}

func (fr *frame) snapshot() (map[string]value, []string) {
	m := make(map[string]value, len(fr.vars))
	for k, v := range fr.vars {
		m[k] = v
	}
	return m, append([]string(nil), fr.order...)
}

func (fr *frame) restore(m map[string]value, order []string) {
	fr.vars = make(map[string]value, len(m))
	for k, v := range m {
		fr.vars[k] = v
	}
	fr.order = append(fr.order[:0:0], order...)
}

// ---------------------------------------------------------------------------------------------
// Parsed files and their cache

// unit is one parsed file: its functions, which of them are @jit, and its import bindings.
type unit struct {
	file    *syntax.File
	funcs   map[string]*syntax.FuncDef
	names   []string
	jit     map[string]bool
	imports map[string]value
	consts  map[string]*syntax.Assign
	builtin bool // the prelude: positions stay at the caller's call site
}

func newUnit(f *syntax.File) *unit {
	u := &unit{file: f, funcs: map[string]*syntax.FuncDef{}, jit: map[string]bool{}, imports: map[string]value{}, consts: map[string]*syntax.Assign{}}
	for _, fn := range f.Funcs {
		u.funcs[fn.Name] = fn
		u.names = append(u.names, fn.Name)
		for _, d := range fn.Decorators {
			if isJitDecorator(d) {
				u.jit[fn.Name] = true
			}
		}
	}
	for _, im := range f.Imports {
		for _, a := range im.Names {
			if im.IsFrom {
				full := im.Module + "." + a.Name
				name := a.Name
				if a.AsName != "" {
					name = a.AsName
				}
				if m, ok := moduleFor(full); ok {
					u.imports[name] = m
				} else if m, ok := moduleFor(im.Module); ok {
					u.imports[name] = moduleMember{m, a.Name}
				}
				continue
			}
			if a.AsName != "" {
				if m, ok := moduleFor(a.Name); ok {
					u.imports[a.AsName] = m
				}
				continue
			}
			// `import triton.language` binds "triton".
			root := strings.SplitN(a.Name, ".", 2)[0]
			if m, ok := moduleFor(root); ok {
				u.imports[root] = m
			}
		}
	}
	for _, c := range f.Constants {
		if len(c.Targets) == 1 {
			if n, ok := c.Targets[0].(*syntax.Name); ok {
				u.consts[n.ID] = c
			}
		}
	}
	sort.Strings(u.names)
	return u
}

// moduleMember is a `from M import NAME` binding, resolved on first use.
type moduleMember struct {
	mod  cModule
	name string
}

func moduleFor(path string) (cModule, bool) {
	switch path {
	case "triton":
		return "triton", true
	case "triton.language", "triton.language.core":
		return "tl", true
	case "triton.language.math", "triton.language.libdevice", "triton.language.extra.libdevice",
		"triton.language.extra.cuda.libdevice", "triton.language.extra.cuda":
		return "tl.math", true
	case "math":
		return "math", true
	}
	return "", false
}

func isJitDecorator(d syntax.Expr) bool {
	if c, ok := d.(*syntax.Call); ok {
		d = c.Func
	}
	switch x := d.(type) {
	case *syntax.Name:
		return x.ID == "jit"
	case *syntax.Attribute:
		return x.Name == "jit"
	}
	return false
}

type cacheKey struct {
	file string
	hash uint64
	n    int
}

// parseCache keeps the most recently used parsed files: lowering specializes one template
// many times, and parsing is most of the cost of a small kernel.
var parseCache = struct {
	sync.Mutex
	m    map[cacheKey]*cacheEntry
	tick uint64
}{m: map[cacheKey]*cacheEntry{}}

type cacheEntry struct {
	u    *unit
	text string
	used uint64
}

const parseCacheSize = 64

func parseCached(file, text string) (*unit, error) {
	h := fnv.New64a()
	io.WriteString(h, text)
	key := cacheKey{file, h.Sum64(), len(text)}
	parseCache.Lock()
	parseCache.tick++
	if e, ok := parseCache.m[key]; ok && e.text == text {
		e.used = parseCache.tick
		parseCache.Unlock()
		return e.u, nil
	}
	parseCache.Unlock()
	f, err := syntax.ParseFile(file, []byte(text))
	if err != nil {
		var list syntax.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			p := list[0].Pos
			return nil, &Error{Pos: ir.Pos{File: p.File, Line: p.Line, Col: p.Col}, Msg: list[0].Msg, Syntax: list}
		}
		return nil, &Error{Pos: ir.Pos{File: file}, Msg: err.Error()}
	}
	u := newUnit(f)
	parseCache.Lock()
	defer parseCache.Unlock()
	if len(parseCache.m) >= parseCacheSize {
		var oldest cacheKey
		var min uint64 = ^uint64(0)
		for k, e := range parseCache.m {
			if e.used < min {
				min, oldest = e.used, k
			}
		}
		delete(parseCache.m, oldest)
	}
	parseCache.m[key] = &cacheEntry{u: u, text: text, used: parseCache.tick}
	return u, nil
}

// ---------------------------------------------------------------------------------------------
// Binding the kernel's parameters

func isConstexprAnnotation(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.Name:
		return x.ID == "constexpr"
	case *syntax.Attribute:
		return x.Name == "constexpr"
	case *syntax.Constant:
		return x.Kind == syntax.ConstStr && strings.HasSuffix(x.Str, "constexpr")
	}
	return false
}

// parseSigType reads a signature entry: "*fp32", "i32", "fp16", "i1", "*i8", ... A Triton
// divisibility suffix (":16") is accepted and ignored: it is only an alignment hint.
func parseSigType(s string) (ir.Type, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ':'); i >= 0 {
		for _, c := range s[i+1:] {
			if c < '0' || c > '9' {
				return ir.Type{}, false
			}
		}
		s = s[:i]
	}
	ptr := strings.HasPrefix(s, "*")
	d, ok := ir.ParseDType(strings.TrimPrefix(s, "*"))
	if !ok {
		return ir.Type{}, false
	}
	return ir.Type{Elem: d, Ptr: ptr}, true
}

func (s *spec) bindKernel(def *syntax.FuncDef, sig map[string]string, consts map[string]any) {
	fr := &frame{vars: map[string]value{}, unit: s.unit}
	s.fr = fr
	known := map[string]bool{}
	var missing []string
	var bindings []ir.ConstBinding
	for _, p := range def.Params {
		known[p.Name] = true
		isConstexpr := p.Annotation != nil && isConstexprAnnotation(p.Annotation)
		st, inSig := sig[p.Name]
		cv, inConsts := consts[p.Name]
		switch {
		case inSig && inConsts:
			s.pos = toPos(p.Pos())
			s.fail("parameter %s is given both a signature type (%s) and a constexpr value", p.Name, st)
		case inSig && isConstexpr:
			s.pos = toPos(p.Pos())
			s.fail("parameter %s is tl.constexpr: give its value in consts, not a signature type", p.Name)
		case inSig:
			t, ok := parseSigType(st)
			if !ok {
				s.pos = toPos(p.Pos())
				s.fail("parameter %s: bad signature type %q (want *fp32, i32, fp16, i1, ...)", p.Name, st)
			}
			fr.set(p.Name, s.f.NewParam(p.Name, t))
		case inConsts:
			v, ok := fromGo(cv)
			if !ok {
				s.pos = toPos(p.Pos())
				s.fail("parameter %s: constexpr value %v of Go type %T is not supported", p.Name, cv, cv)
			}
			fr.set(p.Name, v)
			bindings = append(bindings, ir.ConstBinding{Name: p.Name, Value: constString(v)})
		case p.Default != nil:
			s.pos = toPos(p.Default.Pos())
			v := s.evalConstExpr(p.Default)
			fr.set(p.Name, v)
			bindings = append(bindings, ir.ConstBinding{Name: p.Name, Value: constString(v)})
		default:
			missing = append(missing, p.Name)
		}
	}
	s.f.Consts = bindings
	s.consts = s.f.ConstString()
	var extra []string
	for k := range sig {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	for k := range consts {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	s.pos = toPos(def.Pos())
	if len(missing) > 0 {
		s.fail("kernel %s: no signature type or constexpr value for parameter(s) %s", def.Name, strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		s.fail("kernel %s has no parameter(s) %s", def.Name, strings.Join(extra, ", "))
	}
}

// runFunc executes the kernel body in the current frame.
func (s *spec) runFunc(def *syntax.FuncDef, u *unit) {
	s.execBlock(def.Body)
	if s.fr.returned && s.fr.ret != nil {
		if _, none := s.fr.ret.(cNone); !none {
			s.fail("a kernel cannot return a value")
		}
	}
}

// evalConstExpr evaluates e and requires a compile-time result.
func (s *spec) evalConstExpr(e syntax.Expr) value {
	v := s.eval(e)
	if !isConst(v) {
		s.fail("expected a compile-time value, got %s", typeName(v))
	}
	return v
}
