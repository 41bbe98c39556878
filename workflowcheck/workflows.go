package workflowcheck

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strconv"
)

// root is one workflow function: the second argument of a
// harvest.NewWorkflow call, a literal or a named function.
type root struct {
	pos  token.Pos
	name string       // the workflow's name, quoted, or "" if not constant
	lit  *ast.FuncLit // a literal, or nil
	fn   *types.Func  // a function or method value, or nil
}

// roots finds the package's workflow functions.
func (c *checker) roots() []root {
	if !importsSDK(c.pass.Pkg) {
		return nil
	}
	var roots []root
	for _, file := range c.pass.Files {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if ok && len(call.Args) == 2 && sdkFunc(c.pass.TypesInfo, call) == "NewWorkflow" {
				roots = append(roots, c.root(call))
			}
			return true
		})
	}
	return roots
}

// root describes the workflow function of a NewWorkflow call.
func (c *checker) root(call *ast.CallExpr) root {
	arg := ast.Unparen(call.Args[1])
	r := root{pos: arg.Pos()}
	if tv, ok := c.pass.TypesInfo.Types[call.Args[0]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		r.name = strconv.Quote(constant.StringVal(tv.Value))
	}
	if lit, ok := arg.(*ast.FuncLit); ok {
		r.lit = lit
	} else {
		r.fn = funcRef(c.pass.TypesInfo, arg)
	}
	return r
}

// checkWorkflows reports the findings of every workflow function and of
// every function of the package that they reach, each function once.
// A call to a function of another package of the module with a
// NonDeterministic fact is reported at the call.
func (c *checker) checkWorkflows() {
	w := &walk{c: c, seen: map[*types.Func]bool{}}
	for _, r := range c.roots() {
		switch {
		case r.lit != nil:
			w.queue = append(w.queue, queued{lit: r.lit, workflow: r.name})
		case r.fn != nil && c.decls[r.fn] != nil:
			w.enqueue(r.fn, r.name, "")
		case r.fn != nil:
			w.follow(edge{r.pos, r.fn}, r.name, "")
		}
	}
	for len(w.queue) > 0 {
		next := w.queue[0]
		w.queue = w.queue[1:]
		if next.lit != nil {
			w.report(scan(c.pass.Pkg, c.pass.TypesInfo, next.lit.Body), next.workflow, "")
		} else {
			w.report(c.summary(next.fn), next.workflow, next.helper)
		}
	}
}

// walk is the breadth-first walk from the workflow functions.
type walk struct {
	c     *checker
	seen  map[*types.Func]bool
	queue []queued
}

// queued is a body to report, reached from workflow: a workflow
// literal, or a declared function.
type queued struct {
	lit      *ast.FuncLit
	fn       *types.Func
	workflow string
	helper   string // fn's name if it is not the workflow function itself
}

// report reports the findings of one body, and follows its edges. helper
// is "" for a workflow function itself, else the function's name.
func (w *walk) report(s *summary, workflow, helper string) {
	note := ""
	if helper != "" {
		note = fmt.Sprintf(" (in %s, called from workflow %s)", helper, cmp.Or(workflow, "code"))
	}
	for _, f := range s.findings {
		if !w.c.ig.covers(f.pos) {
			w.c.pass.Reportf(f.pos, "%s%s", f.msg, note)
		}
	}
	for _, e := range s.edges {
		w.follow(e, workflow, note)
	}
}

// follow queues a function of the package, or reports a call to a
// function of the module that has a NonDeterministic fact.
func (w *walk) follow(e edge, workflow, note string) {
	switch {
	case w.c.ig.covers(e.pos):
	case w.c.decls[e.callee] != nil:
		w.enqueue(e.callee, workflow, funcName(e.callee))
	default:
		if f := w.c.importedFact(e.callee); f != nil {
			w.c.pass.Reportf(e.pos, "call to %s: %s%s", funcName(e.callee), f.describe(), note)
		}
	}
}

// enqueue queues a function of the package, once. helper is "" for a
// workflow function itself.
func (w *walk) enqueue(fn *types.Func, workflow, helper string) {
	if !w.seen[fn] {
		w.seen[fn] = true
		w.queue = append(w.queue, queued{fn: fn, workflow: workflow, helper: helper})
	}
}
