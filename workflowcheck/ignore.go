package workflowcheck

import (
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// ignoreDirective is the escape hatch: on a finding's line, or the line
// above, it suppresses the finding.
const ignoreDirective = "//harvest:ignore"

// lineKey names one line of one file.
type lineKey struct {
	file string
	line int
}

// ignores holds the lines that carry an ignore directive.
type ignores struct {
	fset  *token.FileSet
	lines map[lineKey]bool
}

// collectIgnores finds every directive in the package and reports those
// without a reason.
func collectIgnores(pass *analysis.Pass) *ignores {
	ig := &ignores{fset: pass.Fset, lines: map[lineKey]bool{}}
	for _, file := range pass.Files {
		for _, group := range file.Comments {
			for _, c := range group.List {
				ig.add(pass, c)
			}
		}
	}
	return ig
}

// add records c if it is a directive.
func (ig *ignores) add(pass *analysis.Pass, c *ast.Comment) {
	rest, ok := strings.CutPrefix(c.Text, ignoreDirective)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return
	}
	p := ig.fset.Position(c.Slash)
	ig.lines[lineKey{p.Filename, p.Line}] = true
	if strings.TrimSpace(rest) == "" {
		pass.Reportf(c.Slash, "harvest:ignore needs a reason: //harvest:ignore <why this is deterministic>")
	}
}

// covers reports whether a directive suppresses a finding at pos.
func (ig *ignores) covers(pos token.Pos) bool {
	p := ig.fset.Position(pos)
	return ig.lines[lineKey{p.Filename, p.Line}] || ig.lines[lineKey{p.Filename, p.Line - 1}]
}
