package e2e

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a run prints.
type Report struct {
	Profile                  string
	Seed                     uint64
	Nodes                    int
	Duration                 time.Duration // load phase
	Total                    time.Duration // whole run, setup to check
	Ops                      []*Op
	Faults                   []*Fault
	Violations               []Violation
	Executions               int
	Redelivered, StillParked int
	Quiesce                  time.Duration // heal -> every workflow closed
	Notes                    []string
}

// Print writes the report as tables, followed by at most maxViolations
// violations (all when negative).
func (r *Report) Print(w io.Writer, maxViolations int) {
	fmt.Fprintf(w, "\n=== Harvest fault-injection report: profile %s, seed %d, %d nodes, load %s, total %s ===\n",
		r.Profile, r.Seed, r.Nodes, r.Duration.Round(time.Second), r.Total.Round(time.Second))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tsent\tanswered\tunanswered\t4xx\tre-deliveries\tafter heal\tattempts\tp50\tp99\tmax\t")
	kinds := map[string][]*Op{}
	var order []string
	for _, op := range r.Ops {
		k := op.Kind + " " + op.Workflow
		if op.Probe {
			k = "probe start"
		}
		if _, ok := kinds[k]; !ok {
			order = append(order, k)
		}
		kinds[k] = append(kinds[k], op)
	}
	sort.Strings(order)
	var all []*Op
	for _, k := range order {
		all = append(all, kinds[k]...)
		opRow(tw, k, kinds[k])
	}
	opRow(tw, "total", all)
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "fault\tnode\tinjected\theld\trecovery\tready\tresult")
	seen := map[string]bool{}
	t0 := time.Time{}
	if len(r.Faults) > 0 {
		t0 = r.Faults[0].Injected
	}
	for _, f := range r.Faults {
		res := "ok"
		switch {
		case f.Skipped != "":
			res = "SKIPPED: " + f.Skipped
		case f.Err != "":
			res = "ERROR: " + f.Err
		default:
			seen[f.Type] = true
		}
		node := "-"
		if f.Node > 0 {
			node = NodeID(f.Node)
		}
		fmt.Fprintf(tw, "%s %s\t%s\t+%s\t%s\t%s\t%s\t%s\n", f.Type, f.Detail, node, f.Injected.Sub(t0).Round(time.Second),
			f.Healed.Sub(f.Injected).Round(100*time.Millisecond), f.Recovery.Round(time.Millisecond), f.Ready.Round(100*time.Millisecond), res)
	}
	tw.Flush()
	var missing []string
	for _, typ := range AllFaults {
		if !seen[typ] {
			missing = append(missing, typ)
		}
	}
	fmt.Fprintf(w, "fault types injected: %d of %d", len(AllFaults)-len(missing), len(AllFaults))
	if len(missing) > 0 {
		fmt.Fprintf(w, " (NOT injected: %s)", strings.Join(missing, ", "))
	}
	fmt.Fprintf(w, "\nrecovery = heal -> first answered keyed start through the faulted node (any node for cluster-wide faults); ready = heal -> every node ready, all members alive, raft leader\n")

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tviolations")
	count := map[string]int{}
	for _, v := range r.Violations {
		count[v.Check]++
	}
	for _, c := range AllChecks {
		fmt.Fprintf(tw, "%s\t%d\n", c, count[c])
	}
	fmt.Fprintf(tw, "TOTAL\t%d\n", len(r.Violations))
	tw.Flush()
	fmt.Fprintf(w, "executions in the shard databases: %d; parked chains re-delivered after the heal: %d (left unanswered or refused: %d); heal -> all workflows closed: %s\n",
		r.Executions, r.Redelivered, r.StillParked, r.Quiesce.Round(100*time.Millisecond))
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for i, v := range r.Violations {
		if i == maxViolations {
			fmt.Fprintf(w, "... %d more violations\n", len(r.Violations)-maxViolations)
			break
		}
		fmt.Fprintf(w, "VIOLATION [%s] %s\n", v.Check, v.Detail)
	}
}

func opRow(w io.Writer, name string, ops []*Op) {
	var ok, unanswered, refused, dups, redeliv, attempts int
	var lat []time.Duration
	for _, op := range ops {
		attempts += len(op.Attempts)
		switch {
		case op.Answered(): // a 2xx, or a cancel's 409 execution_terminal
			ok++
			lat = append(lat, op.End.Sub(op.Begin))
		case op.Status/100 == 4 && op.Status != 429:
			refused++
		default:
			unanswered++
		}
		if op.Dup {
			dups++
		}
		if op.Redelivery {
			redeliv++
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) string {
		if len(lat) == 0 {
			return "-"
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", name, len(ops), ok, unanswered, refused, dups, redeliv, attempts,
		pct(0.5), pct(0.99), pct(1))
}
