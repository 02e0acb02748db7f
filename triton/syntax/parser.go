package syntax

import (
	"fmt"
	"strings"
)

// ParseFile parses the kernel source src; path names the file in positions and errors. On
// failure it returns the ErrorList of every scanner and parser error found (sorted by
// position) together with the partial File, which callers should not rely on.
func ParseFile(path string, src []byte) (*File, error) {
	toks, scanErr := Scan(path, src)
	p := &parser{toks: toks, path: path}
	if el, ok := scanErr.(ErrorList); ok {
		p.errs = append(p.errs, el...)
	}
	f := p.parseFile()
	p.errs.Sort()
	return f, p.errs.Err()
}

// ParseExpr parses a single expression (for tests and tools); path names it in errors.
func ParseExpr(path string, src []byte) (Expr, error) {
	toks, scanErr := Scan(path, src)
	p := &parser{toks: toks, path: path}
	if el, ok := scanErr.(ErrorList); ok {
		p.errs = append(p.errs, el...)
	}
	var x Expr
	func() {
		defer p.recoverBailout()
		x = p.parseTestList(false)
		for p.tok().Kind == TokNewline {
			p.next()
		}
		if t := p.tok(); t.Kind != TokEOF {
			p.fail(t.Pos, "unexpected %s after expression", t.describe())
		}
	}()
	p.errs.Sort()
	return x, p.errs.Err()
}

type parser struct {
	path    string
	toks    []Token
	i       int
	prevEnd Pos // end of the last consumed token
	errs    ErrorList
	depth   int // expressions and blocks open around the current token
}

// Nesting limits. The parser and every later pass over the tree (format, specializer) recurse
// once per level, so unbounded nesting (200k parentheses) would overflow the Go stack; Python
// itself stops at 200 parentheses and 100 indentation levels.
const (
	// MaxNesting bounds nested expressions (parentheses, brackets, calls, unary operators)
	// and blocks, counted together.
	MaxNesting = 200
	// MaxChain bounds the operands of one chain of binary operators and the trailers of one
	// primary (a.b[c](d)...): each link is one more level of the tree.
	MaxChain = 1000
)

// enter opens one level of nesting at pos, failing past MaxNesting; leave closes it. A bailout
// skips leave: safeStmt restores the depth it started with.
func (p *parser) enter(pos Pos, what string) {
	p.depth++
	if p.depth > MaxNesting {
		p.fail(pos, "%s nested deeper than %d levels", what, MaxNesting)
	}
}

func (p *parser) leave() { p.depth-- }

// chain fails at pos when one chain of operators or trailers reaches MaxChain links.
func (p *parser) chain(pos Pos, links int, what string) {
	if links >= MaxChain {
		p.fail(pos, "more than %d %s in one expression (the expression tree is nested that deep); split it with temporaries", MaxChain, what)
	}
}

// bailout unwinds the parser to the statement loop after an error that makes the rest of the
// statement meaningless; the loop then resynchronises at the next statement.
type bailout struct{}

func (p *parser) tok() Token { return p.toks[p.i] }

func (p *parser) peekTok(k int) Token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() Token {
	t := p.toks[p.i]
	if t.Kind != TokEOF {
		p.i++
	}
	p.prevEnd = t.End
	return t
}

func (p *parser) errorf(pos Pos, format string, args ...any) {
	p.errs.Add(pos, fmt.Sprintf(format, args...))
}

func (p *parser) fail(pos Pos, format string, args ...any) {
	p.errorf(pos, format, args...)
	panic(bailout{})
}

func (p *parser) recoverBailout() {
	if r := recover(); r != nil {
		if _, ok := r.(bailout); !ok {
			panic(r)
		}
	}
}

// isOp reports whether the current token is the operator or delimiter op.
func (p *parser) isOp(op string) bool {
	t := p.tok()
	return t.Kind == TokOp && t.Text == op
}

func (p *parser) isKw(kw string) bool {
	t := p.tok()
	return t.Kind == TokKeyword && t.Text == kw
}

func (p *parser) gotOp(op string) bool {
	if p.isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) gotKw(kw string) bool {
	if p.isKw(kw) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op, context string) Token {
	if !p.isOp(op) {
		t := p.tok()
		p.fail(t.Pos, "expected %q %s, found %s", op, context, t.describe())
	}
	return p.next()
}

func (p *parser) expectName(context string) Token {
	t := p.tok()
	if t.Kind != TokName {
		if t.Kind == TokKeyword {
			p.fail(t.Pos, "expected %s, found keyword %q", context, t.Text)
		}
		p.fail(t.Pos, "expected %s, found %s", context, t.describe())
	}
	return p.next()
}

func (p *parser) expectNewline() {
	t := p.tok()
	switch t.Kind {
	case TokNewline:
		p.next()
	case TokEOF:
	default:
		if t.Kind == TokOp && t.Text == ":=" {
			p.fail(t.Pos, "assignment expressions (:=) are not supported")
		}
		p.fail(t.Pos, "expected end of statement, found %s", t.describe())
	}
}

// sync skips to the start of the next statement after an error: past the end of the current
// logical line and past any block that line opened, without leaving the enclosing block.
func (p *parser) sync() {
	level := 0
	for {
		t := p.tok()
		switch t.Kind {
		case TokEOF:
			return
		case TokIndent:
			level++
		case TokDedent:
			if level == 0 {
				return
			}
			level--
			if level == 0 {
				p.next()
				return
			}
		case TokNewline:
			if level == 0 {
				p.next()
				if p.tok().Kind == TokIndent {
					p.skipBlock()
				}
				return
			}
		}
		p.next()
	}
}

// skipBlock skips a balanced Indent ... Dedent run.
func (p *parser) skipBlock() {
	level := 0
	for {
		t := p.next()
		switch t.Kind {
		case TokEOF:
			return
		case TokIndent:
			level++
		case TokDedent:
			level--
			if level == 0 {
				return
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Statements

func (p *parser) parseFile() *File {
	f := &File{Path: p.path}
	f.From = Pos{File: p.path, Line: 1, Col: 1}
	first := true
	for p.tok().Kind != TokEOF {
		switch p.tok().Kind {
		case TokNewline, TokDedent:
			p.next()
			continue
		}
		start := p.i
		stmts := p.safeStmt(true)
		if p.i == start {
			p.next() // guarantee progress after an error on a token sync cannot skip
		}
		for _, st := range stmts {
			p.addModuleStmt(f, st, first)
			first = false
		}
	}
	f.To = p.tok().End
	return f
}

// addModuleStmt records one module-level statement in f, rejecting what a kernel file may not
// contain at module level.
func (p *parser) addModuleStmt(f *File, st Stmt, first bool) {
	switch st := st.(type) {
	case *Import:
		f.Imports = append(f.Imports, st)
	case *FuncDef:
		f.Funcs = append(f.Funcs, st)
	case *Assign:
		f.Constants = append(f.Constants, st)
	case *Pass:
	case *ExprStmt:
		if c, ok := st.X.(*Constant); ok && c.Kind == ConstStr {
			if first {
				f.Doc = c.Str
			}
			return // a string statement is a comment
		}
		p.errorf(st.Pos(), "module-level expression statements are not supported in a kernel file")
		return
	case *AnnAssign:
		p.errorf(st.Pos(), "module-level annotated assignments are not supported; write NAME = tl.constexpr(VALUE)")
		return
	default:
		p.errorf(st.Pos(), "module-level %s is not supported in a kernel file", stmtKindName(st))
		return
	}
	f.Stmts = append(f.Stmts, st)
}

func stmtKindName(st Stmt) string {
	switch st.(type) {
	case *If:
		return "if statement"
	case *For:
		return "for loop"
	case *While:
		return "while loop"
	case *Return:
		return "return statement"
	case *Break:
		return "break statement"
	case *Continue:
		return "continue statement"
	case *Assert:
		return "assert statement"
	case *AugAssign:
		return "augmented assignment"
	}
	return fmt.Sprintf("%T statement", st)
}

// safeStmt parses one statement line (several for `a; b`), recovering from errors.
func (p *parser) safeStmt(moduleLevel bool) (stmts []Stmt) {
	depth := p.depth
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			p.depth = depth
			p.sync()
			stmts = nil
		}
	}()
	return p.parseStmt(moduleLevel)
}

func (p *parser) parseStmt(moduleLevel bool) []Stmt {
	t := p.tok()
	switch t.Kind {
	case TokIndent:
		p.fail(t.Pos, "unexpected indent")
	case TokOp:
		if t.Text == "@" {
			return []Stmt{p.parseDecorated(moduleLevel)}
		}
	case TokKeyword:
		switch t.Text {
		case "def":
			if !moduleLevel {
				p.fail(t.Pos, "nested function definitions (def inside a function) are not supported; define helpers at module level with @triton.jit")
			}
			return []Stmt{p.parseFuncDef(nil)}
		case "if":
			return []Stmt{p.parseIf(moduleLevel)}
		case "while":
			return []Stmt{p.parseWhile(moduleLevel)}
		case "for":
			return []Stmt{p.parseFor(moduleLevel)}
		case "class":
			p.fail(t.Pos, "class definitions are not supported")
		case "try":
			p.fail(t.Pos, "try statements are not supported")
		case "with":
			p.fail(t.Pos, "with statements are not supported")
		case "async":
			p.fail(t.Pos, "async functions and statements are not supported")
		case "elif", "else", "except", "finally":
			p.fail(t.Pos, "unexpected %q without a matching statement", t.Text)
		}
	}
	return p.parseSimpleStmts(moduleLevel)
}

// parseSimpleStmts parses `small_stmt (; small_stmt)* [;] NEWLINE`.
func (p *parser) parseSimpleStmts(moduleLevel bool) []Stmt {
	var out []Stmt
	for {
		out = append(out, p.parseSmallStmt(moduleLevel))
		if !p.gotOp(";") {
			break
		}
		if k := p.tok().Kind; k == TokNewline || k == TokEOF {
			break
		}
	}
	p.expectNewline()
	return out
}

func (p *parser) parseSmallStmt(moduleLevel bool) Stmt {
	t := p.tok()
	if t.Kind == TokKeyword {
		switch t.Text {
		case "pass":
			p.next()
			return &Pass{Span{t.Pos, t.End}}
		case "break":
			p.next()
			return &Break{Span{t.Pos, t.End}}
		case "continue":
			p.next()
			return &Continue{Span{t.Pos, t.End}}
		case "return":
			p.next()
			r := &Return{Span: Span{From: t.Pos}}
			if !p.atStmtEnd() {
				r.Value = p.parseTestList(true)
			}
			r.To = p.prevEnd
			return r
		case "assert":
			p.next()
			a := &Assert{Span: Span{From: t.Pos}}
			a.Cond = p.parseTest()
			if p.gotOp(",") {
				a.Msg = p.parseTest()
			}
			a.To = p.prevEnd
			return a
		case "import", "from":
			imp := p.parseImport()
			if !moduleLevel {
				p.errorf(t.Pos, "import statements inside a function are not supported; import at module level")
			}
			return imp
		case "global", "nonlocal":
			p.fail(t.Pos, "%s statements are not supported", t.Text)
		case "del":
			p.fail(t.Pos, "del statements are not supported")
		case "raise":
			p.fail(t.Pos, "raise statements are not supported; use tl.device_assert or tl.static_assert")
		case "yield":
			p.fail(t.Pos, "yield is not supported (kernels are not generators)")
		}
	}
	return p.parseExprStmt()
}

func (p *parser) atStmtEnd() bool {
	t := p.tok()
	return t.Kind == TokNewline || t.Kind == TokEOF || t.Kind == TokOp && t.Text == ";"
}

var augOps = map[string]Operator{
	"+=": OpAdd, "-=": OpSub, "*=": OpMult, "/=": OpDiv, "//=": OpFloorDiv, "%=": OpMod,
	"**=": OpPow, "<<=": OpLShift, ">>=": OpRShift, "&=": OpBitAnd, "|=": OpBitOr,
	"^=": OpBitXor, "@=": OpMatMult,
}

func isAugOp(text string) bool {
	_, ok := augOps[text]
	return ok
}

func (p *parser) parseExprStmt() Stmt {
	start := p.tok().Pos
	lhs := p.parseTestList(true)
	t := p.tok()
	switch {
	case t.Kind == TokOp && t.Text == "=":
		a := &Assign{Span: Span{From: start}}
		targets := []Expr{lhs}
		var value Expr
		for p.gotOp("=") {
			if p.isKw("yield") {
				p.fail(p.tok().Pos, "yield is not supported (kernels are not generators)")
			}
			value = p.parseTestList(true)
			if p.isOp("=") {
				targets = append(targets, value)
			}
		}
		for _, tg := range targets {
			p.checkTarget(tg, false)
		}
		a.Targets, a.Value = targets, value
		a.To = p.prevEnd
		return a
	case t.Kind == TokOp && isAugOp(t.Text):
		p.next()
		p.checkTarget(lhs, true)
		s := &AugAssign{Span: Span{From: start}, Target: lhs, Op: augOps[t.Text], OpPos: t.Pos}
		s.Value = p.parseTestList(true)
		s.To = p.prevEnd
		return s
	case t.Kind == TokOp && t.Text == ":":
		p.next()
		switch lhs.(type) {
		case *Name, *Attribute, *Subscript:
		default:
			p.fail(lhs.Pos(), "only a single name, attribute or subscript can be annotated, not %s", exprKindName(lhs))
		}
		s := &AnnAssign{Span: Span{From: start}, Target: lhs}
		s.Annotation = p.parseTest()
		if p.gotOp("=") {
			s.Value = p.parseTestList(true)
		}
		s.To = p.prevEnd
		return s
	case t.Kind == TokOp && t.Text == ":=":
		p.fail(t.Pos, "assignment expressions (:=) are not supported")
	}
	return &ExprStmt{Span: Span{start, p.prevEnd}, X: lhs}
}

// checkTarget reports an expression that cannot be assigned to. Augmented assignments take a
// single target only.
func (p *parser) checkTarget(x Expr, augmented bool) {
	switch x := x.(type) {
	case *Name, *Attribute, *Subscript:
		return
	case *Tuple:
		if !augmented {
			for _, e := range x.Elts {
				p.checkTarget(e, false)
			}
			return
		}
	case *List:
		if !augmented {
			for _, e := range x.Elts {
				p.checkTarget(e, false)
			}
			return
		}
	case *Starred:
		return // already reported where it was parsed
	}
	if augmented {
		p.fail(x.Pos(), "cannot use %s as the target of an augmented assignment", exprKindName(x))
	}
	p.fail(x.Pos(), "cannot assign to %s", exprKindName(x))
}

func exprKindName(x Expr) string {
	switch x := x.(type) {
	case *Name:
		return "a name"
	case *Constant:
		return "a literal"
	case *Call:
		return "a function call"
	case *BinOp, *UnaryOp:
		return "an expression"
	case *BoolOp:
		return "a boolean expression"
	case *Compare:
		return "a comparison"
	case *IfExp:
		return "a conditional expression"
	case *Tuple:
		return "a tuple"
	case *List:
		return "a list"
	case *Attribute:
		return "an attribute"
	case *Subscript:
		return "a subscript"
	case *Slice:
		return "a slice"
	case *Starred:
		return "a starred expression"
	default:
		return fmt.Sprintf("%T", x)
	}
}

func (p *parser) parseImport() *Import {
	t := p.next()
	imp := &Import{Span: Span{From: t.Pos}}
	if t.Text == "import" {
		for {
			a := &Alias{Span: Span{From: p.tok().Pos}}
			a.Name = p.parseDottedName()
			if p.gotKw("as") {
				a.AsName = p.expectName("a name after 'as'").Text
			}
			a.To = p.prevEnd
			imp.Names = append(imp.Names, a)
			if !p.gotOp(",") {
				break
			}
		}
		imp.To = p.prevEnd
		return imp
	}
	imp.IsFrom = true
	for {
		if p.gotOp(".") {
			imp.Level++
		} else if p.gotOp("...") {
			imp.Level += 3
		} else {
			break
		}
	}
	if !p.isKw("import") {
		imp.Module = p.parseDottedName()
	} else if imp.Level == 0 {
		p.fail(p.tok().Pos, "expected a module name after 'from'")
	}
	if !p.gotKw("import") {
		p.fail(p.tok().Pos, "expected 'import' in from-import, found %s", p.tok().describe())
	}
	if p.isOp("*") {
		p.fail(p.tok().Pos, "wildcard imports (from m import *) are not supported")
	}
	paren := p.gotOp("(")
	for {
		a := &Alias{Span: Span{From: p.tok().Pos}}
		a.Name = p.expectName("a name to import").Text
		if p.gotKw("as") {
			a.AsName = p.expectName("a name after 'as'").Text
		}
		a.To = p.prevEnd
		imp.Names = append(imp.Names, a)
		if !p.gotOp(",") {
			break
		}
		if paren && p.isOp(")") {
			break
		}
	}
	if paren {
		p.expectOp(")", "to close the import list")
	}
	imp.To = p.prevEnd
	return imp
}

func (p *parser) parseDottedName() string {
	parts := []string{p.expectName("a module name").Text}
	for p.gotOp(".") {
		parts = append(parts, p.expectName("a name after '.'").Text)
	}
	return strings.Join(parts, ".")
}

// parseBlock parses `: NEWLINE INDENT stmts DEDENT` or `: simple_stmts` on the same line.
func (p *parser) parseBlock(context string) []Stmt {
	p.expectOp(":", "after "+context)
	if p.tok().Kind != TokNewline {
		return p.parseSimpleStmts(false)
	}
	p.next()
	if p.tok().Kind != TokIndent {
		p.fail(p.tok().Pos, "expected an indented block after %s", context)
	}
	p.enter(p.peekTok(1).Pos, "blocks")
	p.next()
	var body []Stmt
	for {
		switch p.tok().Kind {
		case TokDedent:
			p.next()
			p.leave()
			return body
		case TokEOF:
			p.leave()
			return body
		case TokNewline:
			p.next()
			continue
		}
		start := p.i
		body = append(body, p.safeStmt(false)...)
		if p.i == start {
			p.next()
		}
	}
}

// blockEnd is the end of a block's last statement (fallback for an empty block).
func blockEnd(body []Stmt, fallback Pos) Pos {
	if len(body) == 0 {
		return fallback
	}
	return body[len(body)-1].End()
}

func (p *parser) parseDecorated(moduleLevel bool) Stmt {
	at := p.tok().Pos
	if !moduleLevel {
		p.fail(at, "decorators are only allowed on module-level functions")
	}
	var decos []Expr
	for p.isOp("@") {
		p.next()
		decos = append(decos, p.parseTest())
		p.expectNewline()
		for p.tok().Kind == TokNewline {
			p.next()
		}
	}
	t := p.tok()
	switch {
	case t.Kind == TokKeyword && t.Text == "def":
		return p.parseFuncDef(decos)
	case t.Kind == TokKeyword && t.Text == "class":
		p.fail(t.Pos, "class definitions are not supported")
	case t.Kind == TokKeyword && t.Text == "async":
		p.fail(t.Pos, "async functions and statements are not supported")
	}
	p.fail(t.Pos, "expected 'def' after decorators, found %s", t.describe())
	return nil
}

func (p *parser) parseFuncDef(decos []Expr) *FuncDef {
	def := p.next()
	nameTok := p.expectName("a function name after 'def'")
	// Like Python's FunctionDef, the node starts at 'def', not at its decorators.
	fn := &FuncDef{Span: Span{From: def.Pos}, Name: nameTok.Text, NamePos: nameTok.Pos, Decorators: decos}
	p.expectOp("(", "after the function name")
	seenDefault := false
	seen := map[string]bool{}
	for !p.isOp(")") {
		t := p.tok()
		switch {
		case t.Kind == TokOp && t.Text == "**":
			p.fail(t.Pos, "**kwargs parameters are not supported")
		case t.Kind == TokOp && t.Text == "*":
			if p.peekTok(1).Kind == TokName {
				p.fail(t.Pos, "*args parameters are not supported")
			}
			p.fail(t.Pos, "keyword-only parameters (a bare '*') are not supported")
		case t.Kind == TokOp && t.Text == "/":
			p.fail(t.Pos, "positional-only parameters (a bare '/') are not supported")
		}
		nt := p.expectName("a parameter name")
		prm := &Param{Span: Span{From: nt.Pos}, Name: nt.Text}
		if seen[nt.Text] {
			p.errorf(nt.Pos, "duplicate parameter %q in function %s", nt.Text, fn.Name)
		}
		seen[nt.Text] = true
		if p.gotOp(":") {
			prm.Annotation = p.parseTest()
		}
		prm.To = p.prevEnd // like Python's arg node, the span excludes the default
		if p.gotOp("=") {
			prm.Default = p.parseTest()
			seenDefault = true
		} else if seenDefault {
			p.errorf(nt.Pos, "parameter %q without a default follows a parameter with a default", nt.Text)
		}
		fn.Params = append(fn.Params, prm)
		if !p.gotOp(",") {
			break
		}
	}
	p.expectOp(")", "to close the parameter list")
	if p.gotOp("->") {
		fn.Returns = p.parseTest()
	}
	body := p.parseBlock("the function signature")
	if len(body) > 0 {
		if es, ok := body[0].(*ExprStmt); ok {
			if c, ok := es.X.(*Constant); ok && c.Kind == ConstStr {
				fn.Doc = c.Str
				body = body[1:]
				if len(body) == 0 {
					body = []Stmt{&Pass{es.Span}}
				}
			}
		}
	}
	fn.Body = body
	fn.To = blockEnd(body, p.prevEnd)
	return fn
}

func (p *parser) parseIf(moduleLevel bool) *If {
	t := p.next() // if or elif
	s := &If{Span: Span{From: t.Pos}, Elif: t.Text == "elif"}
	s.Cond = p.parseNamedTest()
	s.Body = p.parseBlock("the if condition")
	switch {
	case p.isKw("elif"):
		s.Else = []Stmt{p.parseIf(moduleLevel)}
	case p.isKw("else"):
		p.next()
		s.Else = p.parseBlock("'else'")
	}
	s.To = blockEnd(s.Else, blockEnd(s.Body, p.prevEnd))
	return s
}

func (p *parser) parseWhile(moduleLevel bool) *While {
	t := p.next()
	s := &While{Span: Span{From: t.Pos}}
	s.Cond = p.parseNamedTest()
	s.Body = p.parseBlock("the while condition")
	if p.isKw("else") {
		p.fail(p.tok().Pos, "while ... else is not supported")
	}
	s.To = blockEnd(s.Body, p.prevEnd)
	return s
}

func (p *parser) parseFor(moduleLevel bool) *For {
	t := p.next()
	s := &For{Span: Span{From: t.Pos}}
	s.Target = p.parseExprList()
	p.checkTarget(s.Target, false)
	if !p.gotKw("in") {
		p.fail(p.tok().Pos, "expected 'in' after the for-loop target, found %s", p.tok().describe())
	}
	s.Iter = p.parseTestList(true)
	s.Body = p.parseBlock("the for-loop header")
	if p.isKw("else") {
		p.fail(p.tok().Pos, "for ... else is not supported")
	}
	s.To = blockEnd(s.Body, p.prevEnd)
	return s
}

// ---------------------------------------------------------------------------------------------
// Expressions

// parseTestList parses `test (, test)* [,]`, a Tuple when there is a comma. starOK allows
// starred items to be parsed (they are then reported).
func (p *parser) parseTestList(starOK bool) Expr {
	return p.parseList(starOK, p.parseTest)
}

// parseExprList parses a for-loop target list, whose items stop before comparisons so that
// `in` is left for the loop header.
func (p *parser) parseExprList() Expr {
	return p.parseList(true, p.parseBitOr)
}

func (p *parser) parseList(starOK bool, item func() Expr) Expr {
	start := p.tok().Pos
	first := p.parseListItem(starOK, item)
	if !p.isOp(",") {
		return first
	}
	elts := []Expr{first}
	for p.gotOp(",") {
		if !p.startsExpr() {
			break
		}
		elts = append(elts, p.parseListItem(starOK, item))
	}
	return &Tuple{Span: Span{start, p.prevEnd}, Elts: elts}
}

func (p *parser) parseListItem(starOK bool, item func() Expr) Expr {
	if p.isOp("*") {
		return p.parseStarred()
	}
	return item()
}

func (p *parser) parseStarred() Expr {
	t := p.next()
	x := p.parseBitOr()
	p.errorf(t.Pos, "starred expressions (*x) are not supported")
	return &Starred{Span: Span{t.Pos, p.prevEnd}, X: x}
}

// startsExpr reports whether the current token can begin an expression (used to accept a
// trailing comma).
func (p *parser) startsExpr() bool {
	t := p.tok()
	switch t.Kind {
	case TokName, TokInt, TokFloat, TokString:
		return true
	case TokKeyword:
		switch t.Text {
		case "None", "True", "False", "not", "lambda", "await", "yield":
			return true
		}
	case TokOp:
		switch t.Text {
		case "(", "[", "{", "-", "+", "~", "*", "...":
			return true
		}
	}
	return false
}

// parseNamedTest parses a test in a position where Python allows `:=` (if/while conditions),
// so the walrus gets its own message.
func (p *parser) parseNamedTest() Expr {
	x := p.parseTest()
	if p.isOp(":=") {
		p.fail(p.tok().Pos, "assignment expressions (:=) are not supported")
	}
	return x
}

func (p *parser) parseTest() Expr {
	t := p.tok()
	if t.Kind == TokKeyword {
		switch t.Text {
		case "lambda":
			p.fail(t.Pos, "lambda expressions are not supported; define a @triton.jit function at module level")
		case "yield":
			p.fail(t.Pos, "yield is not supported (kernels are not generators)")
		}
	}
	start := t.Pos
	p.enter(start, "expressions")
	x := p.parseOr()
	if p.isKw("if") {
		p.next()
		cond := p.parseOr()
		if !p.gotKw("else") {
			p.fail(p.tok().Pos, "expected 'else' in conditional expression, found %s", p.tok().describe())
		}
		els := p.parseTest()
		p.leave()
		return &IfExp{Span: Span{start, p.prevEnd}, Cond: cond, Then: x, Else: els}
	}
	if p.isOp(":=") {
		p.fail(p.tok().Pos, "assignment expressions (:=) are not supported")
	}
	p.leave()
	return x
}

func (p *parser) parseOr() Expr {
	start := p.tok().Pos
	x := p.parseAnd()
	if !p.isKw("or") {
		return x
	}
	vals := []Expr{x}
	for p.gotKw("or") {
		vals = append(vals, p.parseAnd())
	}
	return &BoolOp{Span: Span{start, p.prevEnd}, Op: BoolOr, Values: vals}
}

func (p *parser) parseAnd() Expr {
	start := p.tok().Pos
	x := p.parseNot()
	if !p.isKw("and") {
		return x
	}
	vals := []Expr{x}
	for p.gotKw("and") {
		vals = append(vals, p.parseNot())
	}
	return &BoolOp{Span: Span{start, p.prevEnd}, Op: BoolAnd, Values: vals}
}

func (p *parser) parseNot() Expr {
	if p.isKw("not") {
		t := p.next()
		p.enter(t.Pos, "unary operators")
		x := p.parseNot()
		p.leave()
		return &UnaryOp{Span: Span{t.Pos, p.prevEnd}, Op: UNot, X: x}
	}
	return p.parseComparison()
}

// cmpOp returns the comparison operator at the current token, its length in tokens, and
// whether there is one.
func (p *parser) cmpOp() (CmpOp, int, bool) {
	t := p.tok()
	switch {
	case t.Kind == TokOp:
		switch t.Text {
		case "==":
			return CmpEq, 1, true
		case "!=":
			return CmpNotEq, 1, true
		case "<":
			return CmpLt, 1, true
		case "<=":
			return CmpLtE, 1, true
		case ">":
			return CmpGt, 1, true
		case ">=":
			return CmpGtE, 1, true
		}
	case t.Kind == TokKeyword && t.Text == "in":
		return CmpIn, 1, true
	case t.Kind == TokKeyword && t.Text == "is":
		if n := p.peekTok(1); n.Kind == TokKeyword && n.Text == "not" {
			return CmpIsNot, 2, true
		}
		return CmpIs, 1, true
	case t.Kind == TokKeyword && t.Text == "not":
		if n := p.peekTok(1); n.Kind == TokKeyword && n.Text == "in" {
			return CmpNotIn, 2, true
		}
	}
	return 0, 0, false
}

func (p *parser) parseComparison() Expr {
	start := p.tok().Pos
	x := p.parseBitOr()
	op, n, ok := p.cmpOp()
	if !ok {
		return x
	}
	c := &Compare{Span: Span{From: start}, Operands: []Expr{x}}
	for ok {
		opPos := p.tok().Pos
		for k := 0; k < n; k++ {
			p.next()
		}
		if len(c.Ops) == 1 {
			p.errorf(opPos, "chained comparisons (a %s b %s c) are not supported; write (a %s b) and (b %s c)", c.Ops[0], op, c.Ops[0], op)
		}
		c.Ops = append(c.Ops, op)
		c.OpPos = append(c.OpPos, opPos)
		c.Operands = append(c.Operands, p.parseBitOr())
		op, n, ok = p.cmpOp()
	}
	c.To = p.prevEnd
	return c
}

// binLevels lists the binary operator levels from loosest to tightest below comparisons.
var binLevels = []map[string]Operator{
	{"|": OpBitOr},
	{"^": OpBitXor},
	{"&": OpBitAnd},
	{"<<": OpLShift, ">>": OpRShift},
	{"+": OpAdd, "-": OpSub},
	{"*": OpMult, "/": OpDiv, "//": OpFloorDiv, "%": OpMod, "@": OpMatMult},
}

func (p *parser) parseBitOr() Expr { return p.parseBinary(0) }

func (p *parser) parseBinary(level int) Expr {
	if level == len(binLevels) {
		return p.parseFactor()
	}
	start := p.tok().Pos
	x := p.parseBinary(level + 1)
	for links := 0; ; links++ {
		t := p.tok()
		if t.Kind != TokOp {
			return x
		}
		op, ok := binLevels[level][t.Text]
		if !ok {
			return x
		}
		p.chain(t.Pos, links, "binary operators")
		p.next()
		y := p.parseBinary(level + 1)
		x = &BinOp{Span: Span{start, p.prevEnd}, Op: op, OpPos: t.Pos, X: x, Y: y}
	}
}

func (p *parser) parseFactor() Expr {
	t := p.tok()
	if t.Kind == TokOp {
		var op UnaryOperator
		switch t.Text {
		case "+":
			op = UAdd
		case "-":
			op = USub
		case "~":
			op = UInvert
		default:
			return p.parsePower()
		}
		p.next()
		p.enter(t.Pos, "unary operators")
		x := p.parseFactor()
		p.leave()
		return &UnaryOp{Span: Span{t.Pos, p.prevEnd}, Op: op, X: x}
	}
	return p.parsePower()
}

func (p *parser) parsePower() Expr {
	if p.isKw("await") {
		p.fail(p.tok().Pos, "await is not supported")
	}
	start := p.tok().Pos
	x := p.parsePrimary()
	if p.isOp("**") {
		t := p.next()
		p.enter(t.Pos, "'**' operators")
		y := p.parseFactor() // right-associative, and -x**-y is -(x**(-y))
		p.leave()
		return &BinOp{Span: Span{start, p.prevEnd}, Op: OpPow, OpPos: t.Pos, X: x, Y: y}
	}
	return x
}

func (p *parser) parsePrimary() Expr {
	start := p.tok().Pos
	x := p.parseAtom()
	for links := 0; ; links++ {
		t := p.tok()
		if t.Kind != TokOp {
			return x
		}
		if t.Text == "." || t.Text == "(" || t.Text == "[" {
			p.chain(t.Pos, links, "attributes, calls and subscripts")
		}
		switch t.Text {
		case ".":
			p.next()
			nt := p.expectName("an attribute name after '.'")
			x = &Attribute{Span: Span{start, nt.End}, X: x, Name: nt.Text, NamePos: nt.Pos}
		case "(":
			x = p.parseCall(start, x)
		case "[":
			x = p.parseSubscript(start, x)
		default:
			return x
		}
	}
}

func (p *parser) parseCall(start Pos, fn Expr) Expr {
	p.next() // (
	c := &Call{Span: Span{From: start}, Func: fn}
	seenKw := map[string]bool{}
	for !p.isOp(")") {
		t := p.tok()
		switch {
		case t.Kind == TokOp && t.Text == "*":
			p.fail(t.Pos, "*args in calls are not supported")
		case t.Kind == TokOp && t.Text == "**":
			p.fail(t.Pos, "**kwargs in calls are not supported")
		case t.Kind == TokName && p.peekTok(1).Kind == TokOp && p.peekTok(1).Text == "=":
			p.next()
			p.next()
			kw := &Keyword{Span: Span{From: t.Pos}, Name: t.Text}
			kw.Value = p.parseTest()
			kw.To = p.prevEnd
			if seenKw[t.Text] {
				p.errorf(t.Pos, "keyword argument %q repeated", t.Text)
			}
			seenKw[t.Text] = true
			c.Keywords = append(c.Keywords, kw)
		default:
			arg := p.parseTest()
			if p.isKw("for") {
				p.fail(p.tok().Pos, "generator expressions are not supported")
			}
			if len(c.Keywords) > 0 {
				p.errorf(arg.Pos(), "positional argument follows keyword argument")
			}
			c.Args = append(c.Args, arg)
		}
		if !p.gotOp(",") {
			break
		}
	}
	p.expectOp(")", "to close the argument list")
	c.To = p.prevEnd
	return c
}

func (p *parser) parseSubscript(start Pos, x Expr) Expr {
	p.next() // [
	s := &Subscript{Span: Span{From: start}, X: x}
	for {
		if p.isOp("]") {
			if len(s.Index) == 0 {
				p.fail(p.tok().Pos, "expected an index inside '[]'")
			}
			break
		}
		s.Index = append(s.Index, p.parseIndexItem())
		if !p.gotOp(",") {
			break
		}
	}
	p.expectOp("]", "to close the subscript")
	s.To = p.prevEnd
	return s
}

// parseIndexItem parses one subscript item: a test, or a slice lo:hi:step with any part absent.
func (p *parser) parseIndexItem() Expr {
	start := p.tok().Pos
	var lo Expr
	if !p.isOp(":") {
		if p.isOp("*") {
			return p.parseStarred()
		}
		lo = p.parseTest()
		if !p.isOp(":") {
			return lo
		}
	}
	p.next() // :
	sl := &Slice{Span: Span{From: start}, Lo: lo}
	if !p.isOp(":") && !p.isOp(",") && !p.isOp("]") {
		sl.Hi = p.parseTest()
	}
	if p.gotOp(":") {
		if !p.isOp(",") && !p.isOp("]") {
			sl.Step = p.parseTest()
		}
	}
	sl.To = p.prevEnd
	return sl
}

func (p *parser) parseAtom() Expr {
	t := p.tok()
	switch t.Kind {
	case TokName:
		p.next()
		return &Name{Span: Span{t.Pos, t.End}, ID: t.Text}
	case TokInt:
		p.next()
		return &Constant{Span: Span{t.Pos, t.End}, Kind: ConstInt, Int: t.Int, Raw: t.Text}
	case TokFloat:
		p.next()
		return &Constant{Span: Span{t.Pos, t.End}, Kind: ConstFloat, Float: t.Float, Raw: t.Text}
	case TokString:
		return p.parseStrings()
	case TokKeyword:
		switch t.Text {
		case "None":
			p.next()
			return &Constant{Span: Span{t.Pos, t.End}, Kind: ConstNone, Raw: t.Text}
		case "True", "False":
			p.next()
			return &Constant{Span: Span{t.Pos, t.End}, Kind: ConstBool, Bool: t.Text == "True", Raw: t.Text}
		case "lambda":
			p.fail(t.Pos, "lambda expressions are not supported; define a @triton.jit function at module level")
		case "yield":
			p.fail(t.Pos, "yield is not supported (kernels are not generators)")
		case "await":
			p.fail(t.Pos, "await is not supported")
		}
		p.fail(t.Pos, "expected an expression, found keyword %q", t.Text)
	case TokOp:
		switch t.Text {
		case "(":
			return p.parseParen()
		case "[":
			return p.parseListDisplay()
		case "{":
			p.fail(t.Pos, "dict and set displays ({...}) are not supported")
		case "...":
			p.next()
			return &Constant{Span: Span{t.Pos, t.End}, Kind: ConstEllipsis, Raw: t.Text}
		case ":=":
			p.fail(t.Pos, "assignment expressions (:=) are not supported")
		}
	case TokIndent:
		p.fail(t.Pos, "unexpected indent")
	}
	p.fail(t.Pos, "expected an expression, found %s", t.describe())
	return nil
}

// parseStrings concatenates adjacent string literals, as Python does.
func (p *parser) parseStrings() Expr {
	first := p.next()
	c := &Constant{Span: Span{first.Pos, first.End}, Kind: ConstStr, Str: first.Str, Raw: first.Text}
	if first.IsBytes {
		c.Kind = ConstBytes
	}
	for p.tok().Kind == TokString {
		t := p.next()
		if t.IsBytes != first.IsBytes {
			p.errorf(t.Pos, "cannot mix bytes and non-bytes string literals")
		}
		c.Str += t.Str
		c.Raw += " " + t.Text
		c.To = t.End
	}
	return c
}

func (p *parser) parseParen() Expr {
	open := p.next()
	if p.isOp(")") {
		cl := p.next()
		return &Tuple{Span: Span{open.Pos, cl.End}, Paren: true}
	}
	if p.isKw("yield") {
		p.fail(p.tok().Pos, "yield is not supported (kernels are not generators)")
	}
	first := p.parseListItem(true, p.parseTest)
	if p.isKw("for") {
		p.fail(p.tok().Pos, "generator expressions are not supported")
	}
	if p.isOp(")") {
		p.next()
		// A parenthesized expression is its inner node with its inner span, as in Python;
		// enclosing nodes start at the parenthesis.
		return first
	}
	elts := []Expr{first}
	for p.gotOp(",") {
		if p.isOp(")") {
			break
		}
		elts = append(elts, p.parseListItem(true, p.parseTest))
	}
	cl := p.expectOp(")", "to close the parenthesis")
	return &Tuple{Span: Span{open.Pos, cl.End}, Elts: elts, Paren: true}
}

func (p *parser) parseListDisplay() Expr {
	open := p.next()
	l := &List{Span: Span{From: open.Pos}}
	for !p.isOp("]") {
		l.Elts = append(l.Elts, p.parseListItem(true, p.parseTest))
		if len(l.Elts) == 1 && p.isKw("for") {
			p.fail(p.tok().Pos, "list comprehensions are not supported")
		}
		if !p.gotOp(",") {
			break
		}
	}
	cl := p.expectOp("]", "to close the list")
	l.To = cl.End
	return l
}
