package workflowcheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
)

// Advice for each kind of finding: what workflow code uses instead.
const (
	adviceChannel  = "use harvest.NewChannel"
	adviceSelect   = "use harvest.NewSelector"
	adviceGo       = "use harvest.Go"
	adviceRand     = "use harvest.SideEffect"
	adviceEnv      = "pass configuration in the workflow input or via harvest.SideEffect"
	adviceMapOrder = "iterate sorted keys (slices.Sorted(maps.Keys(m)))"
	adviceTimer    = "use harvest.NewTimer(ctx, d)"
	adviceGlobal   = "workflow state must live in local variables"
)

// timeAdvice maps each forbidden function of package time to its advice.
var timeAdvice = map[string]string{
	"Now":       "use ctx.Now()",
	"Since":     "use ctx.Now().Sub(t)",
	"Until":     "use t.Sub(ctx.Now())",
	"Sleep":     "use harvest.Sleep(ctx, d)",
	"After":     adviceTimer,
	"Tick":      adviceTimer,
	"NewTimer":  adviceTimer,
	"NewTicker": adviceTimer,
	"AfterFunc": adviceTimer,
}

// osEnv is the functions of package os that read the environment.
var osEnv = map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true}

// randPackages is the packages of random numbers: none of their
// package-level functions or variables may be used.
var randPackages = map[string]bool{"math/rand": true, "math/rand/v2": true, "crypto/rand": true}

// mapIterators is the functions of package maps whose sequence has the
// map's random order.
var mapIterators = map[string]bool{"Keys": true, "Values": true, "All": true}

// finding is one thing that workflow code must not do.
type finding struct {
	pos token.Pos
	msg string
}

// edge is a reference from a body to a function: a call, or a function
// or method value.
type edge struct {
	pos    token.Pos
	callee *types.Func
}

// summary is what one body does: its own findings, and the functions it
// references.
type summary struct {
	findings []finding
	edges    []edge
}

// scanner walks one body into a summary.
type scanner struct {
	pkg  *types.Package
	info *types.Info
	sum  summary
}

// scan summarizes body. The function arguments of harvest.SideEffect,
// harvest.NewActivity and harvest.NewWorkflow are left out: they are not
// workflow code of this body.
func scan(pkg *types.Package, info *types.Info, body ast.Node) *summary {
	s := &scanner{pkg: pkg, info: info}
	ast.Inspect(body, s.visit)
	return &s.sum
}

// add records a finding.
func (s *scanner) add(pos token.Pos, what, advice string) {
	s.sum.findings = append(s.sum.findings, finding{pos, what + " in workflow code: " + advice})
}

// visit is the ast.Inspect callback.
func (s *scanner) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		s.add(n.Go, "go statement", adviceGo)
	case *ast.SelectStmt:
		s.selectStmt(n)
		return false
	case *ast.SendStmt:
		s.add(n.Arrow, "channel send", adviceChannel)
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			s.add(n.OpPos, "channel receive", adviceChannel)
		}
	case *ast.RangeStmt:
		s.rangeStmt(n)
	case *ast.AssignStmt:
		if n.Tok != token.DEFINE {
			for _, lhs := range n.Lhs {
				s.write(lhs)
			}
		}
	case *ast.IncDecStmt:
		s.write(n.X)
	case *ast.CallExpr:
		return s.call(n)
	case *ast.Ident:
		s.ident(n)
	}
	return true
}

// selectStmt reports a select, and walks only the clause bodies: the
// channel operations of its cases are the select's.
func (s *scanner) selectStmt(n *ast.SelectStmt) {
	s.add(n.Select, "select", adviceSelect)
	for _, clause := range n.Body.List {
		for _, stmt := range clause.(*ast.CommClause).Body {
			ast.Inspect(stmt, s.visit)
		}
	}
}

// rangeStmt reports a range over a map, a map iterator or a channel,
// and an assignment of its key or value to a package variable.
func (s *scanner) rangeStmt(n *ast.RangeStmt) {
	if n.Tok == token.ASSIGN {
		for _, e := range []ast.Expr{n.Key, n.Value} {
			if e != nil {
				s.write(e)
			}
		}
	}
	switch s.info.TypeOf(n.X).Underlying().(type) {
	case *types.Map:
		s.add(n.For, "range over a map", adviceMapOrder)
		return
	case *types.Chan:
		s.add(n.For, "range over a channel", adviceChannel)
		return
	}
	if call, ok := ast.Unparen(n.X).(*ast.CallExpr); ok {
		if fn := calleeFunc(s.info, call); fn != nil && fn.Pkg().Path() == "maps" && mapIterators[fn.Name()] {
			s.add(n.For, "range over maps."+fn.Name(), adviceMapOrder)
		}
	}
}

// call handles close and make(chan), and leaves out the function
// arguments of the SDK calls that take code which is not workflow code.
func (s *scanner) call(n *ast.CallExpr) bool {
	if b, ok := s.info.Uses[calleeIdent(n.Fun)].(*types.Builtin); ok {
		s.builtin(n, b.Name())
		return true
	}
	switch sdkFunc(s.info, n) {
	case "SideEffect", "NewActivity", "NewWorkflow":
	default:
		return true
	}
	ast.Inspect(n.Fun, s.visit)
	for _, arg := range n.Args {
		if _, isFunc := s.info.TypeOf(arg).Underlying().(*types.Signature); !isFunc {
			ast.Inspect(arg, s.visit)
		}
	}
	return false
}

// builtin reports close and make(chan).
func (s *scanner) builtin(n *ast.CallExpr, name string) {
	switch {
	case name == "close":
		s.add(n.Lparen, "close of a channel", adviceChannel)
	case name == "make" && len(n.Args) > 0:
		if _, ok := s.info.TypeOf(n.Args[0]).Underlying().(*types.Chan); ok {
			s.add(n.Lparen, "make(chan)", adviceChannel)
		}
	}
}

// ident reports a use of a forbidden function or variable, and records a
// reference to any other function.
func (s *scanner) ident(id *ast.Ident) {
	obj := s.info.Uses[id]
	if obj == nil || obj.Pkg() == nil {
		return
	}
	if what, advice, ok := forbidden(obj); ok {
		s.add(id.Pos(), what, advice)
		return
	}
	if fn, ok := obj.(*types.Func); ok && !isInterfaceMethod(fn) {
		s.sum.edges = append(s.sum.edges, edge{id.Pos(), fn.Origin()})
	}
}

// forbidden tells whether obj is a function or variable that workflow
// code must not use, and what to use instead.
func forbidden(obj types.Object) (what, advice string, ok bool) {
	if obj.Parent() != obj.Pkg().Scope() {
		return "", "", false // a method, a field or a local
	}
	path, name := obj.Pkg().Path(), obj.Name()
	switch _, isFunc := obj.(*types.Func); {
	case path == "time" && isFunc && timeAdvice[name] != "":
		return "time." + name, timeAdvice[name], true
	case path == "os" && isFunc && osEnv[name]:
		return "os." + name, adviceEnv, true
	case randPackages[path] && (isFunc || isVar(obj)):
		return path + "." + name, adviceRand, true
	}
	return "", "", false
}

// write reports an assignment to a package variable, or to a part of one.
func (s *scanner) write(lhs ast.Expr) {
	v := rootVar(s.info, lhs)
	if v == nil || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return
	}
	name := v.Name()
	if v.Pkg() != s.pkg {
		name = v.Pkg().Name() + "." + name
	}
	s.add(lhs.Pos(), fmt.Sprintf("write to package variable %s", name), adviceGlobal)
}

// rootVar is the variable that an assignment to e writes into: x for x,
// x.f, x[i], *x and pkg.x.
func rootVar(info *types.Info, e ast.Expr) *types.Var {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			v, _ := info.Uses[x].(*types.Var)
			return v
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.SelectorExpr:
			if sel := info.Selections[x]; sel != nil {
				if sel.Kind() != types.FieldVal {
					return nil
				}
				e = x.X
				continue
			}
			v, _ := info.Uses[x.Sel].(*types.Var) // a qualified pkg.x
			return v
		default:
			return nil
		}
	}
}

// isVar reports whether obj is a variable.
func isVar(obj types.Object) bool {
	_, ok := obj.(*types.Var)
	return ok
}

// isInterfaceMethod reports whether fn is an interface's method: a
// dynamic call, not followed.
func isInterfaceMethod(fn *types.Func) bool {
	recv := fn.Signature().Recv()
	return recv != nil && types.IsInterface(recv.Type())
}
