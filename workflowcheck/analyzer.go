package workflowcheck

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"

	"golang.org/x/tools/go/analysis"
)

// Analyzer reports non-deterministic code in workflow functions and in
// the functions of the same module that they call.
var Analyzer = &analysis.Analyzer{
	Name:      "workflowcheck",
	Doc:       "report non-deterministic code in Harvest workflow functions\n\n" + docSummary,
	Run:       run,
	FactTypes: []analysis.Fact{new(NonDeterministic)},
}

// docSummary is the analyzer's help beyond its first line.
const docSummary = `Workflow code is replayed against its history and must do the same
thing every time. Inside the functions passed to harvest.NewWorkflow, and
the functions of the module that they call, workflowcheck reports range
over a map, time.Now and the timers of package time, go statements,
channel operations and select, math/rand, math/rand/v2 and crypto/rand,
os.Getenv and os.LookupEnv, and writes to package variables, each with
the SDK call to use instead. A comment "//harvest:ignore <reason>" at the
end of a line suppresses its reports; alone on a line, those of the line
below.`

// checker is the state of one pass.
type checker struct {
	pass   *analysis.Pass
	ig     *ignores
	module string                        // "" outside a module: no facts
	decls  map[*types.Func]*ast.FuncDecl // the package's functions with a body
	order  []*types.Func                 // decls in source order
	sums   map[*types.Func]*summary
}

// run is the analyzer's entry point.
func run(pass *analysis.Pass) (any, error) {
	if pass.Pkg.Path() == sdkPath {
		return nil, nil
	}
	c := &checker{pass: pass, decls: map[*types.Func]*ast.FuncDecl{}, sums: map[*types.Func]*summary{}}
	if pass.Module != nil {
		c.module = pass.Module.Path
	}
	if c.module == "" && !importsSDK(pass.Pkg) {
		return nil, nil // the standard library: nothing to check, no facts
	}
	c.ig = collectIgnores(pass)
	c.collectDecls()
	c.exportFacts()
	c.checkWorkflows()
	return nil, nil
}

// importsSDK reports whether pkg imports the SDK directly.
func importsSDK(pkg *types.Package) bool {
	for _, imp := range pkg.Imports() {
		if imp.Path() == sdkPath {
			return true
		}
	}
	return false
}

// collectDecls indexes the package's function declarations.
func (c *checker) collectDecls() {
	for _, file := range c.pass.Files {
		for _, d := range file.Decls {
			decl, ok := d.(*ast.FuncDecl)
			if !ok || decl.Body == nil {
				continue
			}
			if fn, ok := c.pass.TypesInfo.Defs[decl.Name].(*types.Func); ok {
				c.decls[fn] = decl
				c.order = append(c.order, fn)
			}
		}
	}
}

// summary is the memoized summary of a declared function's body.
func (c *checker) summary(fn *types.Func) *summary {
	if s, ok := c.sums[fn]; ok {
		return s
	}
	s := scan(c.pass.Pkg, c.pass.TypesInfo, c.decls[fn].Body)
	c.sums[fn] = s
	return s
}

// where is pos as file:line.
func (c *checker) where(f finding) string {
	p := c.pass.Fset.Position(f.pos)
	return fmt.Sprintf("%s (%s:%d)", f.msg, filepath.Base(p.Filename), p.Line)
}

// funcName is fn as messages name it: pkg.F or (*pkg.T).M.
func funcName(fn *types.Func) string {
	recv := fn.Signature().Recv()
	if recv == nil {
		return fn.Pkg().Name() + "." + fn.Name()
	}
	t, star := recv.Type(), ""
	if p, ok := t.(*types.Pointer); ok {
		t, star = p.Elem(), "*"
	}
	if n, ok := t.(*types.Named); ok {
		return fmt.Sprintf("(%s%s.%s).%s", star, fn.Pkg().Name(), n.Obj().Name(), fn.Name())
	}
	return fn.Pkg().Name() + "." + fn.Name()
}
