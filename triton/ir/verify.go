package ir

import "fmt"

// VerifyError is the first rule a Func breaks, at the offending instruction.
type VerifyError struct {
	Pos Pos
	Op  Op
	Msg string
}

func (e *VerifyError) Error() string {
	if e.Op == OpInvalid && e.Pos == (Pos{}) {
		return e.Msg // a rule of the function, not of one instruction
	}
	return fmt.Sprintf("%s: %s: %s", e.Pos, e.Op, e.Msg)
}

// Verify checks f against the rules of ops.go, as rules.go states them (CheckInstr): operand
// and result types per op, region arguments and terminators, Yield/result agreement; and SSA
// scoping (every operand is defined once, before its use, in the same block or an enclosing
// one). Backends run only verified IR.
func Verify(f *Func) error {
	v := &verifier{defined: map[*Value]bool{}}
	for _, p := range f.Params {
		if err := v.define(p, nil); err != nil {
			return err
		}
	}
	if f.Body == nil {
		return &VerifyError{Msg: "function has no body"}
	}
	if len(f.Body.Args) > 0 {
		return &VerifyError{Msg: "the function body takes no block arguments"}
	}
	return v.block(f.Body, false)
}

type verifier struct {
	defined map[*Value]bool
	ever    map[*Value]bool
}

func (v *verifier) define(x *Value, in *Instr) error {
	if v.ever == nil {
		v.ever = map[*Value]bool{}
	}
	if x == nil {
		return v.fail(in, "nil value")
	}
	if v.ever[x] {
		return v.fail(in, "value %s is defined twice", valueName(x))
	}
	if err := checkType(x.Type); err != "" {
		return v.fail(in, "value %s: %s", valueName(x), err)
	}
	v.ever[x] = true
	v.defined[x] = true
	return nil
}

func checkType(t Type) string {
	if t.Elem == Invalid || int(t.Elem) >= len(dtypeNames) {
		return "invalid element type"
	}
	for _, d := range t.Shape {
		if d <= 0 {
			return fmt.Sprintf("bad shape %v", t.Shape)
		}
	}
	return ""
}

func (v *verifier) fail(in *Instr, format string, args ...any) error {
	e := &VerifyError{Msg: fmt.Sprintf(format, args...)}
	if in != nil {
		e.Pos, e.Op = in.Pos, in.Op
	}
	return e
}

// block checks a block; region blocks must end with a terminator, the body must not.
func (v *verifier) block(b *Block, region bool) error {
	var local []*Value
	defer func() {
		for _, x := range local {
			delete(v.defined, x)
		}
	}()
	for _, a := range b.Args {
		if err := v.define(a, nil); err != nil {
			return err
		}
		local = append(local, a)
	}
	for i, in := range b.Instrs {
		if in == nil {
			return &VerifyError{Msg: "nil instruction"}
		}
		last := i == len(b.Instrs)-1
		if in.Op == Yield || in.Op == Condition {
			if !region || !last {
				return v.fail(in, "a terminator must be the last instruction of a region block")
			}
		}
		for _, a := range in.Args {
			if a == nil || !v.defined[a] {
				return v.fail(in, "operand %s is not defined before its use (or not in scope)", valueName(a))
			}
		}
		// The op's rules (rules.go) cover its regions' arguments and terminators, so the
		// regions walked below are known to end with the right terminator.
		if err := CheckInstr(in); err != nil {
			return err
		}
		for _, r := range in.Regions {
			if err := v.block(r, true); err != nil {
				return err
			}
		}
		for _, r := range in.Results {
			if err := v.define(r, in); err != nil {
				return err
			}
			local = append(local, r)
		}
	}
	return nil
}
