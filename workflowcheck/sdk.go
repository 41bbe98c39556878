package workflowcheck

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// sdkPath is the import path of the Go SDK. Its own code is the
// deterministic layer that workflows call: it is never checked or
// followed.
const sdkPath = "github.com/harvestd/harvest"

// sdkFunc is the name of the SDK's package-level function that call
// calls, or "".
func sdkFunc(info *types.Info, call *ast.CallExpr) string {
	fn := calleeFunc(info, call)
	if fn == nil || fn.Pkg().Path() != sdkPath || fn.Signature().Recv() != nil {
		return ""
	}
	return fn.Name()
}

// calleeFunc is the function or method that call calls statically, or nil.
func calleeFunc(info *types.Info, call *ast.CallExpr) *types.Func {
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	if fn == nil || fn.Pkg() == nil {
		return nil
	}
	return fn.Origin()
}

// calleeIdent is the identifier that names a called function: f in f(),
// f[T]() and x.f(); nil for any other expression.
func calleeIdent(fun ast.Expr) *ast.Ident {
	switch f := ast.Unparen(fun).(type) {
	case *ast.Ident:
		return f
	case *ast.SelectorExpr:
		return f.Sel
	case *ast.IndexExpr:
		return calleeIdent(f.X)
	case *ast.IndexListExpr:
		return calleeIdent(f.X)
	}
	return nil
}

// funcRef is the function that a function-valued expression names: f,
// pkg.F, x.M or T.M; nil for a literal, a variable or a call.
func funcRef(info *types.Info, e ast.Expr) *types.Func {
	id := calleeIdent(e)
	if id == nil {
		return nil
	}
	fn, _ := info.Uses[id].(*types.Func)
	if fn == nil || fn.Pkg() == nil {
		return nil
	}
	return fn.Origin()
}
