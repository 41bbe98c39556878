package engine_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The engine's layers (docs/design-notes.md, "The engine in layers"):
// a package may import only packages of a lower layer, and the
// workflow-task runner (wftask), which the other paths and services run
// woken tasks through. Nothing under engine/ imports engine itself.
const enginePath = "github.com/harvestd/harvest/engine"

var layers = map[string]int{
	"engine":                   6,
	"engine/internal/outbox":   5,
	"engine/internal/schedule": 5,
	"engine/internal/deferred": 5,
	"engine/internal/flow":     5,
	"engine/internal/maint":    5,
	"engine/internal/intake":   4,
	"engine/internal/wftask":   4,
	"engine/internal/activity": 4,
	"engine/internal/read":     4,
	"engine/internal/update":   4,
	"engine/internal/runs":     3,
	"engine/internal/fence":    2,
	"engine/internal/store":    1,
	"engine/internal/limits":   1,
	"engine/internal/ssrf":     1,
	"engine/internal/loop":     0,
	"engine/shardapi":          0,
}

// sqlDebt lists the files outside internal/store that still hold SQL
// text while the engine moves into its layers (issue 42). It only
// shrinks: a file not listed must hold no SQL, and a listed file that
// holds none any more must leave the list.
var sqlDebt = []string{}

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

// enginePackages lists engine and the packages under it, with their
// imports and non-test files, by go list.
func enginePackages(t *testing.T) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	require.NoError(t, err, "go list")
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listedPackage
	for dec.More() {
		var p listedPackage
		require.NoError(t, dec.Decode(&p))
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

// short is an import path relative to the module ("engine/internal/x"),
// and whether it is under engine/.
func short(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, enginePath)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	return "engine" + rest, true
}

// TestLayers: every package under engine/ has a layer, and imports only
// what its layer may.
func TestLayers(t *testing.T) {
	for _, p := range enginePackages(t) {
		name, _ := short(p.ImportPath)
		t.Run(name, func(t *testing.T) {
			level, ok := layers[name]
			require.True(t, ok, "%s has no layer: add it to layers (and to docs/design-notes.md)", name)
			for _, imp := range p.Imports {
				dep, under := short(imp)
				if !under {
					continue
				}
				require.NotEqual(t, "engine", dep, "%s imports the façade", name)
				require.True(t, mayImport(level, layers[dep], dep), "%s (layer %d) imports %s (layer %d)", name, level, dep, layers[dep])
			}
		})
	}
}

// mayImport: a layer imports lower layers, and the paths and services
// import the workflow-task runner.
func mayImport(level, depLevel int, dep string) bool {
	if depLevel == layers["engine/internal/wftask"] {
		return level == layers["engine"] || (level >= depLevel && dep == "engine/internal/wftask")
	}
	return depLevel < level
}

func TestMayImport(t *testing.T) {
	for _, c := range []struct {
		level, dep int
		name       string
		ok         bool
	}{
		{6, 5, "engine/internal/outbox", true},
		{6, 4, "engine/internal/intake", true},
		{2, 1, "engine/internal/store", true},
		{3, 2, "engine/internal/fence", true},
		{1, 1, "engine/internal/store", false},
		{1, 2, "engine/internal/fence", false},
		{2, 3, "engine/internal/runs", false},
		{5, 4, "engine/internal/wftask", true},
		{5, 4, "engine/internal/intake", false},
		{4, 4, "engine/internal/wftask", true},
		{3, 4, "engine/internal/wftask", false},
	} {
		require.Equal(t, c.ok, mayImport(c.level, c.dep, c.name), "%+v", c)
	}
}

// sqlText matches a string that holds an SQL statement.
var sqlText = regexp.MustCompile(`\b(INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|SELECT\s[\s\S]*\bFROM\b|SELECT\s+\$|WITH\s+\w+\s+AS|ANALYZE\s)`)

// TestSQLOnlyInStore: SQL text (in string literals of non-test files)
// appears only in internal/store, and in the files of sqlDebt.
func TestSQLOnlyInStore(t *testing.T) {
	var holders []string
	for _, p := range enginePackages(t) {
		name, _ := short(p.ImportPath)
		if name == "engine/internal/store" {
			continue
		}
		for _, f := range p.GoFiles {
			if holdsSQL(t, filepath.Join(p.Dir, f)) {
				holders = append(holders, filepath.ToSlash(filepath.Join(name, f)))
			}
		}
	}
	var stray, paid []string
	for _, h := range holders {
		if !slices.Contains(sqlDebt, h) {
			stray = append(stray, h)
		}
	}
	for _, d := range sqlDebt {
		if !slices.Contains(holders, d) {
			paid = append(paid, d)
		}
	}
	require.Empty(t, stray, "these files hold SQL text: move it into internal/store")
	require.Empty(t, paid, "these files hold no SQL any more: take them off sqlDebt")
}

// holdsSQL reports whether a Go file has a string literal of SQL.
func holdsSQL(t *testing.T, path string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, err := strconv.Unquote(lit.Value)
			found = found || (err == nil && sqlText.MatchString(s))
		}
		return !found
	})
	return found
}

func TestSQLText(t *testing.T) {
	for _, c := range []struct {
		s  string
		is bool
	}{
		{"INSERT INTO harvest_events (a) VALUES ($1)", true},
		{"UPDATE harvest_executions SET state = $2", true},
		{"DELETE FROM harvest_tasks WHERE x", true},
		{"SELECT a, b\n FROM harvest_events", true},
		{"\n\tWITH RECURSIVE page AS (SELECT e FROM t)", true},
		{"WITH page AS (SELECT x FROM t)", true},
		{"ANALYZE harvest_events", true},
		{"SELECT $1::bigint", true},
		{"select a workflow", false},
		{"the run to UPDATE", false},
		{"Insert a row", false},
	} {
		require.Equal(t, c.is, sqlText.MatchString(c.s), "%q", c.s)
	}
}
