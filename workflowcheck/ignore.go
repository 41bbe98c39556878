package workflowcheck

import (
	"bytes"
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// ignoreDirective is the escape hatch. At the end of a line it
// suppresses the findings of that line; alone on a line, those of the
// line below.
const ignoreDirective = "//harvest:ignore"

// lineKey names one line of one file.
type lineKey struct {
	file string
	line int
}

// ignores holds the lines that a directive covers.
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

// add records the line c covers, if c is a directive.
func (ig *ignores) add(pass *analysis.Pass, c *ast.Comment) {
	rest, ok := strings.CutPrefix(c.Text, ignoreDirective)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return
	}
	p := ig.fset.Position(c.Slash)
	line := p.Line
	if standalone(pass, p) {
		line++
	}
	ig.lines[lineKey{p.Filename, line}] = true
	if reason, _, _ := strings.Cut(rest, "//"); strings.TrimSpace(reason) == "" {
		pass.Reportf(c.Slash, "harvest:ignore needs a reason: //harvest:ignore <why this is deterministic>")
	}
}

// standalone reports whether only blanks precede the comment at p on its
// line.
func standalone(pass *analysis.Pass, p token.Position) bool {
	src, err := pass.ReadFile(p.Filename)
	if err != nil || p.Offset > len(src) {
		return false
	}
	start := bytes.LastIndexByte(src[:p.Offset], '\n') + 1
	return len(bytes.TrimSpace(src[start:p.Offset])) == 0
}

// covers reports whether a directive suppresses a finding at pos.
func (ig *ignores) covers(pos token.Pos) bool {
	p := ig.fset.Position(pos)
	return ig.lines[lineKey{p.Filename, p.Line}]
}
