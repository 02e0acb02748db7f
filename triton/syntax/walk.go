package syntax

// Inspect traverses the tree rooted at n in depth-first source order, like go/ast.Inspect:
// it calls visit(n); if that returns true it visits n's children, then calls visit(nil).
// Absent optional children (nil interfaces, as the parser leaves them) are skipped.
func Inspect(n Node, visit func(Node) bool) {
	if n == nil || !visit(n) {
		return
	}
	exprs := func(xs []Expr) {
		for _, x := range xs {
			Inspect(x, visit)
		}
	}
	stmts := func(ss []Stmt) {
		for _, s := range ss {
			Inspect(s, visit)
		}
	}
	switch n := n.(type) {
	case *File:
		stmts(n.Stmts)
	case *Import:
		for _, a := range n.Names {
			Inspect(a, visit)
		}
	case *FuncDef:
		exprs(n.Decorators)
		for _, p := range n.Params {
			Inspect(p, visit)
		}
		Inspect(n.Returns, visit)
		stmts(n.Body)
	case *Param:
		Inspect(n.Annotation, visit)
		Inspect(n.Default, visit)
	case *Assign:
		exprs(n.Targets)
		Inspect(n.Value, visit)
	case *AugAssign:
		Inspect(n.Target, visit)
		Inspect(n.Value, visit)
	case *AnnAssign:
		Inspect(n.Target, visit)
		Inspect(n.Annotation, visit)
		Inspect(n.Value, visit)
	case *ExprStmt:
		Inspect(n.X, visit)
	case *Return:
		Inspect(n.Value, visit)
	case *If:
		Inspect(n.Cond, visit)
		stmts(n.Body)
		stmts(n.Else)
	case *For:
		Inspect(n.Target, visit)
		Inspect(n.Iter, visit)
		stmts(n.Body)
	case *While:
		Inspect(n.Cond, visit)
		stmts(n.Body)
	case *Assert:
		Inspect(n.Cond, visit)
		Inspect(n.Msg, visit)
	case *Attribute:
		Inspect(n.X, visit)
	case *Call:
		Inspect(n.Func, visit)
		exprs(n.Args)
		for _, k := range n.Keywords {
			Inspect(k, visit)
		}
	case *Keyword:
		Inspect(n.Value, visit)
	case *Subscript:
		Inspect(n.X, visit)
		exprs(n.Index)
	case *Slice:
		Inspect(n.Lo, visit)
		Inspect(n.Hi, visit)
		Inspect(n.Step, visit)
	case *BinOp:
		Inspect(n.X, visit)
		Inspect(n.Y, visit)
	case *UnaryOp:
		Inspect(n.X, visit)
	case *BoolOp:
		exprs(n.Values)
	case *Compare:
		exprs(n.Operands)
	case *IfExp:
		Inspect(n.Then, visit)
		Inspect(n.Cond, visit)
		Inspect(n.Else, visit)
	case *Tuple:
		exprs(n.Elts)
	case *List:
		exprs(n.Elts)
	case *Starred:
		Inspect(n.X, visit)
	}
	visit(nil)
}
