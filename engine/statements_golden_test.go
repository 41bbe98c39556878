package engine_test

import (
	"fmt"
	"slices"
	"strings"
)

// Rendering and reading the golden file.
//
// A section is one operation's window:
//
//	== KeyedStart: 3 round trips, 10 statements
//	-- outside a transaction: 1 round trip
//	   rt  SELECT 0    | SELECT r.i, c.execution_id, …
//	-- transaction: 1 round trip
//	   rt  BEGIN       | BEGIN
//	       SELECT 1    | SELECT pg_advisory_xact_lock_shared($1)
//
// Each statement line shows its outcome, then its text; "rt" marks the
// first statement of a round trip.

const (
	sectionPrefix = "== "
	unitPrefix    = "-- "
	rtMark        = "rt  "
	noMark        = "    "
	outWidth      = 12
)

// render is a section of the golden file.
func render(name string, units []*unit) string {
	var b strings.Builder
	trips, stmts := 0, 0
	for _, u := range units {
		trips += len(u.rts)
		stmts += len(u.stmts())
	}
	fmt.Fprintf(&b, "%s%s: %s, %s\n", sectionPrefix, name, plural(trips, "round trip"), plural(stmts, "statement"))
	for _, u := range units {
		b.WriteString(u.render())
	}
	return b.String()
}

func (u *unit) render() string {
	var b strings.Builder
	kind := "outside a transaction"
	if u.tx {
		kind = "transaction"
	}
	fmt.Fprintf(&b, "%s%s: %s\n", unitPrefix, kind, plural(len(u.rts), "round trip"))
	for _, rt := range u.rts {
		for i, s := range rt.stmts {
			mark := noMark
			if i == 0 {
				mark = rtMark
			}
			fmt.Fprintf(&b, "   %s%-*s| %s\n", mark, outWidth, s.out, s.show)
		}
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// golden is the golden file read back: each section's units.
type golden map[string][]*unit

// parseGolden reads what render wrote; lines starting with # are comments.
func parseGolden(text string) (golden, error) {
	g := golden{}
	var (
		name string
		u    *unit
	)
	for n, line := range strings.Split(text, "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, sectionPrefix):
			name, _, _ = strings.Cut(strings.TrimPrefix(line, sectionPrefix), ":")
			g[name] = []*unit{}
		case strings.HasPrefix(line, unitPrefix) && name != "":
			u = &unit{tx: strings.HasPrefix(line, unitPrefix+"transaction")}
			g[name] = append(g[name], u)
		case strings.HasPrefix(line, "   ") && u != nil:
			if err := u.parseStmt(line[3:]); err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
		default:
			return nil, fmt.Errorf("line %d: unexpected %q", n+1, line)
		}
	}
	return g, nil
}

// parseStmt adds a statement line (less its indent) to the unit.
func (u *unit) parseStmt(line string) error {
	mark, rest := line[:min(len(line), len(rtMark))], line[min(len(line), len(rtMark)):]
	out, show, ok := strings.Cut(rest, "| ")
	if !ok || (mark != rtMark && mark != noMark) || (mark == noMark && len(u.rts) == 0) {
		return fmt.Errorf("bad statement line %q", line)
	}
	if mark == rtMark {
		u.rts = append(u.rts, &roundTrip{})
	}
	rt := u.rts[len(u.rts)-1]
	rt.stmts = append(rt.stmts, stmt{sql: show, show: show, out: strings.TrimSpace(out)})
	return nil
}

// sameUnits says a and b hold the same units, in any order: units of
// different transactions may finish in either order (a workflow task
// claimed by a poll that began before the signal which made it due).
func sameUnits(a, b []*unit) bool {
	return slices.Equal(sortedRenders(a), sortedRenders(b))
}

func sortedRenders(units []*unit) []string {
	out := make([]string, len(units))
	for i, u := range units {
		out[i] = u.render()
	}
	slices.Sort(out)
	return out
}

// lineDiff shows how got differs from want, line by line: "-" for a line
// only want has, "+" for one only got has (a longest common subsequence).
func lineDiff(want, got string) string {
	a, b := strings.Split(strings.TrimSuffix(want, "\n"), "\n"), strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + a[i] + "\n")
			i++
		default:
			out.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return out.String()
}
