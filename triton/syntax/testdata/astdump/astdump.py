"""Dumps Python's own parse of kernel files in the canonical form that syntax_test.go's
dumpTree prints, so the Go parser is checked against CPython's ast module (an independent
reference for structure, precedence and positions).

Regenerate the golden files (golden/<name>.ast beside the kernels) after adding or changing a
triton/syntax/testdata/*.py file or a shared tutorial kernel in triton/testdata/kernels/:

    cd triton/syntax/testdata && /usr/bin/python3 astdump/astdump.py *.py
    cd triton/testdata/kernels && /usr/bin/python3 ../../syntax/testdata/astdump/astdump.py *.py

Needs Python >= 3.10 (end positions on every node). The canonical form differs from ast.dump
where widejit's AST deliberately differs from Python's: docstrings are lifted out of bodies,
subscript indices are a list, a parameter carries its default.
"""
import ast
import json
import os
import sys

OPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.MatMult: "@",
    ast.UAdd: "+", ast.USub: "-", ast.Invert: "~", ast.Not: "not",
    ast.And: "and", ast.Or: "or",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}


def q(s):
    return json.dumps(s, ensure_ascii=False)


class Dumper:
    def __init__(self, src):
        self.lines = src.split("\n")
        self.out = []

    def span(self, n):
        return "%d:%d-%d:%d" % (n.lineno, n.col_offset + 1, n.end_lineno, n.end_col_offset + 1)

    def line(self, depth, text):
        self.out.append("  " * depth + text)

    def doc(self, body, depth):
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            self.line(depth, "Doc " + q(body[0].value.value))
            return body[1:]
        return body

    def module(self, m):
        self.line(0, "File")
        for s in self.doc(m.body, 1):
            self.stmt(s, 1)

    def stmts(self, label, body, depth):
        self.line(depth, label)
        for s in body:
            self.stmt(s, depth + 1)

    def stmt(self, s, d):
        sp = self.span(s)
        if isinstance(s, ast.Import):
            self.line(d, "Import " + sp)
            for a in s.names:
                self.line(d + 1, "Alias %s %s %s" % (self.span(a), a.name, a.asname or ""))
        elif isinstance(s, ast.ImportFrom):
            self.line(d, "ImportFrom %s %s %d" % (sp, s.module or "", s.level))
            for a in s.names:
                self.line(d + 1, "Alias %s %s %s" % (self.span(a), a.name, a.asname or ""))
        elif isinstance(s, ast.FunctionDef):
            self.line(d, "FuncDef %s %s" % (sp, s.name))
            for dec in s.decorator_list:
                self.line(d + 1, "Decorator")
                self.expr(dec, d + 2)
            args = s.args.args
            defaults = [None] * (len(args) - len(s.args.defaults)) + list(s.args.defaults)
            for a, df in zip(args, defaults):
                self.line(d + 1, "Param %s %s" % (self.span(a), a.arg))
                if a.annotation is not None:
                    self.line(d + 2, "Annotation")
                    self.expr(a.annotation, d + 3)
                if df is not None:
                    self.line(d + 2, "Default")
                    self.expr(df, d + 3)
            if s.returns is not None:
                self.line(d + 1, "Returns")
                self.expr(s.returns, d + 2)
            body = self.doc(s.body, d + 1)
            self.stmts("Body", body, d + 1)
        elif isinstance(s, ast.Assign):
            self.line(d, "Assign " + sp)
            for t in s.targets:
                self.expr(t, d + 1)
            self.expr(s.value, d + 1)
        elif isinstance(s, ast.AugAssign):
            self.line(d, "AugAssign %s %s" % (sp, OPS[type(s.op)]))
            self.expr(s.target, d + 1)
            self.expr(s.value, d + 1)
        elif isinstance(s, ast.AnnAssign):
            self.line(d, "AnnAssign " + sp)
            self.expr(s.target, d + 1)
            self.expr(s.annotation, d + 1)
            if s.value is not None:
                self.expr(s.value, d + 1)
        elif isinstance(s, ast.Expr):
            self.line(d, "ExprStmt " + sp)
            self.expr(s.value, d + 1)
        elif isinstance(s, ast.Return):
            self.line(d, "Return " + sp)
            if s.value is not None:
                self.expr(s.value, d + 1)
        elif isinstance(s, ast.If):
            self.line(d, "If " + sp)
            self.expr(s.test, d + 1)
            self.stmts("Body", s.body, d + 1)
            if s.orelse:
                self.stmts("Else", s.orelse, d + 1)
        elif isinstance(s, ast.For):
            self.line(d, "For " + sp)
            self.expr(s.target, d + 1)
            self.expr(s.iter, d + 1)
            self.stmts("Body", s.body, d + 1)
        elif isinstance(s, ast.While):
            self.line(d, "While " + sp)
            self.expr(s.test, d + 1)
            self.stmts("Body", s.body, d + 1)
        elif isinstance(s, (ast.Pass, ast.Break, ast.Continue)):
            self.line(d, "%s %s" % (type(s).__name__, sp))
        elif isinstance(s, ast.Assert):
            self.line(d, "Assert " + sp)
            self.expr(s.test, d + 1)
            if s.msg is not None:
                self.expr(s.msg, d + 1)
        else:
            raise SystemExit("unsupported statement %s at line %d" % (type(s).__name__, s.lineno))

    def const(self, c):
        v = c.value
        if v is None:
            return "None"
        if v is Ellipsis:
            return "Ellipsis"
        if isinstance(v, bool):
            return "bool " + str(v)
        if isinstance(v, int):
            return "int " + str(v)
        if isinstance(v, float):
            return "float %.17g" % v
        if isinstance(v, bytes):
            return "bytes " + q(v.decode("latin-1"))
        return "str " + q(v)

    def expr(self, e, d):
        sp = self.span(e)
        if isinstance(e, ast.Name):
            self.line(d, "Name %s %s" % (sp, e.id))
        elif isinstance(e, ast.Constant):
            self.line(d, "Constant %s %s" % (sp, self.const(e)))
        elif isinstance(e, ast.Attribute):
            self.line(d, "Attribute %s %s" % (sp, e.attr))
            self.expr(e.value, d + 1)
        elif isinstance(e, ast.Call):
            self.line(d, "Call " + sp)
            self.expr(e.func, d + 1)
            for a in e.args:
                self.expr(a, d + 1)
            for k in e.keywords:
                self.line(d + 1, "Keyword %s %s" % (self.span(k), k.arg))
                self.expr(k.value, d + 2)
        elif isinstance(e, ast.Subscript):
            self.line(d, "Subscript " + sp)
            self.expr(e.value, d + 1)
            sl = e.slice
            line = self.lines[sl.lineno - 1].encode()
            if isinstance(sl, ast.Tuple) and line[sl.col_offset:sl.col_offset + 1] != b"(":
                for x in sl.elts:
                    self.expr(x, d + 1)
            else:
                self.expr(sl, d + 1)
        elif isinstance(e, ast.Slice):
            self.line(d, "Slice " + sp)
            for part in (e.lower, e.upper, e.step):
                if part is None:
                    self.line(d + 1, "-")
                else:
                    self.expr(part, d + 1)
        elif isinstance(e, ast.BinOp):
            self.line(d, "BinOp %s %s" % (sp, OPS[type(e.op)]))
            self.expr(e.left, d + 1)
            self.expr(e.right, d + 1)
        elif isinstance(e, ast.UnaryOp):
            self.line(d, "UnaryOp %s %s" % (sp, OPS[type(e.op)]))
            self.expr(e.operand, d + 1)
        elif isinstance(e, ast.BoolOp):
            self.line(d, "BoolOp %s %s" % (sp, OPS[type(e.op)]))
            for v in e.values:
                self.expr(v, d + 1)
        elif isinstance(e, ast.Compare):
            self.line(d, "Compare %s %s" % (sp, ",".join(OPS[type(o)] for o in e.ops)))
            self.expr(e.left, d + 1)
            for c in e.comparators:
                self.expr(c, d + 1)
        elif isinstance(e, ast.IfExp):
            self.line(d, "IfExp " + sp)
            self.expr(e.test, d + 1)
            self.expr(e.body, d + 1)
            self.expr(e.orelse, d + 1)
        elif isinstance(e, (ast.Tuple, ast.List)):
            self.line(d, "%s %s" % (type(e).__name__, sp))
            for x in e.elts:
                self.expr(x, d + 1)
        else:
            raise SystemExit("unsupported expression %s at line %d" % (type(e).__name__, e.lineno))


def main(paths):
    os.makedirs("golden", exist_ok=True)
    for path in paths:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        d = Dumper(src)
        d.module(ast.parse(src, path))
        name = os.path.join("golden", os.path.basename(path)[:-3] + ".ast")
        with open(name, "w", encoding="utf-8") as f:
            f.write("\n".join(d.out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
