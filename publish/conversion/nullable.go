package conversion

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// nullableBranches lets a conditional have null as one branch and a
// value of any type as the other, as a set rule removes its field with
// `cond ? value : null`: CEL's type checker wants both branches of one
// type, so the other branch is wrapped in dyn(...) before the check.
func nullableBranches(a *ast.AST) {
	fac := ast.NewExprFactory()
	next := ast.MaxID(a)
	info := a.SourceInfo()
	walk(a.Expr(), func(e ast.Expr) {
		if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.Conditional {
			return
		}
		args := e.AsCall().Args()
		if len(args) != 3 {
			return
		}
		wrap := func(i int) {
			next++
			if r, ok := info.GetOffsetRange(args[i].ID()); ok {
				info.SetOffsetRange(next, r)
			}
			args[i] = fac.NewCall(next, "dyn", args[i])
		}
		switch {
		case isNull(args[2]) && !isNull(args[1]):
			wrap(1)
		case isNull(args[1]) && !isNull(args[2]):
			wrap(2)
		default:
			return
		}
		e.SetKindCase(fac.NewCall(e.ID(), operators.Conditional, args...))
	})
}

// isNull reports whether e is the literal null.
func isNull(e ast.Expr) bool {
	return e.Kind() == ast.LiteralKind && e.AsLiteral() == types.NullValue
}

// walk calls fn for e and every expression under it, children first.
func walk(e ast.Expr, fn func(ast.Expr)) {
	if e == nil {
		return
	}
	switch e.Kind() {
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			walk(c.Target(), fn)
		}
		for _, arg := range c.Args() {
			walk(arg, fn)
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		for _, sub := range []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			walk(sub, fn)
		}
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			walk(el, fn)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			walk(en.AsMapEntry().Key(), fn)
			walk(en.AsMapEntry().Value(), fn)
		}
	case ast.SelectKind:
		walk(e.AsSelect().Operand(), fn)
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			walk(f.AsStructField().Value(), fn)
		}
	}
	fn(e)
}
