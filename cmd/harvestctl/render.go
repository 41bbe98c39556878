package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/harvestd/harvest/client"
)

// cellMax bounds JSON cells of multi-row tables; --output json shows all.
const cellMax = 80

// emit writes the server's JSON body pretty-printed, or the table.
func (s *session) emit(raw json.RawMessage, table func(tw *tabwriter.Writer)) error {
	w := s.c.App.Writer
	if s.mode == outputJSON {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return failed(fmt.Errorf("server answered invalid JSON: %w", err))
		}
		buf.WriteByte('\n')
		_, err := buf.WriteTo(w)
		return failed(err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table(tw)
	return failed(tw.Flush())
}

// kv writes one "label  value" row.
func kv(tw *tabwriter.Writer, label, value string) {
	fmt.Fprintf(tw, "%s\t%s\n", label, clean(value))
}

// row writes one row of a columned table.
func row(tw *tabwriter.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = clean(c)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}

// clean keeps a cell on one line and out of tabwriter's way.
func clean(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

func startedRows(tw *tabwriter.Writer, id, name, workflowID, state string) {
	kv(tw, "Execution ID", id)
	kv(tw, "Workflow", name)
	kv(tw, "Workflow ID", workflowID)
	kv(tw, "State", state)
}

// optionalBool writes a row for a field the server may omit.
func optionalBool(tw *tabwriter.Writer, label string, b *bool) {
	if b != nil {
		kv(tw, label, fmt.Sprint(*b))
	}
}

func delivered(b bool) string {
	if b {
		return "true"
	}
	return "false (duplicate idempotency key: no event added)"
}

func closedRows(tw *tabwriter.Writer, id, state, reason string) {
	kv(tw, "Execution ID", id)
	kv(tw, "State", state)
	if reason != "" {
		kv(tw, "Reason", reason)
	}
}

// childrenTable lists a run's children.
func childrenTable(tw *tabwriter.Writer, children []client.Child) {
	if len(children) == 0 {
		fmt.Fprintln(tw, "No children")
		return
	}
	row(tw, "COMMAND", "WORKFLOW", "WORKFLOW ID", "STATE", "EXECUTION ID", "POLICY")
	for _, ch := range children {
		row(tw, ch.CommandID, ch.WorkflowName, ch.WorkflowID, ch.State, cmp.Or(ch.ExecutionID, "-"), ch.ParentClosePolicy)
	}
}

func describeTable(tw *tabwriter.Writer, d *client.Description) {
	x := d.Execution
	startedRows(tw, x.ExecutionID, x.WorkflowName, x.WorkflowID, x.State)
	kv(tw, "Queue", x.Queue)
	kv(tw, "Events", fmt.Sprint(x.EventCount))
	kv(tw, "Created", stamp(x.CreatedAt))
	kv(tw, "Updated", stamp(x.UpdatedAt))
	if x.CompletedAt != nil {
		kv(tw, "Completed", stamp(*x.CompletedAt))
	}
	optionalText(tw, "Idempotency key", x.IdempotencyKey)
	if x.ChainID != "" && x.ChainID != x.ExecutionID {
		kv(tw, "Chain", x.ChainID)
	}
	optionalText(tw, "Continued from", x.ContinuedFrom)
	optionalText(tw, "Continued to", x.ContinuedTo)
	optionalJSON(tw, "Input", x.Input)
	optionalJSON(tw, "Memo", x.Memo)
	optionalJSON(tw, "Output", x.Output)
	optionalJSON(tw, "Error", x.Error)
	optionalText(tw, "Last task error", x.LastError)
	if len(d.PendingActivities) > 0 {
		fmt.Fprintln(tw, "\nPending activities")
		row(tw, "ACTIVITY ID", "NAME", "STATUS", "ATTEMPT", "SCHEDULED", "LAST ERROR")
		for _, a := range d.PendingActivities {
			row(tw, a.ActivityID, a.Name, a.Status, fmt.Sprint(a.Attempt), stamp(a.ScheduledAt), jsonCell(a.LastError, cellMax))
		}
	}
	if len(d.Children) > 0 {
		fmt.Fprintln(tw, "\nChildren")
		childrenTable(tw, d.Children)
	}
	if len(d.PendingTimers) > 0 {
		fmt.Fprintln(tw, "\nPending timers")
		row(tw, "TIMER ID", "FIRE AT")
		for _, tm := range d.PendingTimers {
			row(tw, tm.TimerID, stamp(tm.FireAt))
		}
	}
	fmt.Fprintln(tw, "\nHistory")
	eventRows(tw, d.History)
	if d.HistoryTruncated {
		fmt.Fprintf(tw, "(first %d of %d events: see \"workflow history\")\n", len(d.History), x.EventCount)
	}
}

func historyTable(tw *tabwriter.Writer, p *client.HistoryPage) {
	eventRows(tw, p.Events)
	fmt.Fprintf(tw, "\n%d of %d events shown", len(p.Events), p.TotalEvents)
	if p.NextCursor != nil {
		fmt.Fprintf(tw, "; next page: --after %d", *p.NextCursor)
	}
	fmt.Fprintln(tw)
}

func eventRows(tw *tabwriter.Writer, events []client.Event) {
	row(tw, "EVENT ID", "TYPE", "TIMESTAMP", "DATA")
	for _, e := range events {
		row(tw, fmt.Sprint(e.EventID), e.Type, stamp(e.Timestamp), jsonCell(e.Data, cellMax))
	}
}

func listTable(tw *tabwriter.Writer, p *client.ListPage) {
	row(tw, "EXECUTION ID", "WORKFLOW", "WORKFLOW ID", "STATE", "CREATED", "COMPLETED")
	for _, x := range p.Workflows {
		completed := "-"
		if x.CompletedAt != nil {
			completed = stamp(*x.CompletedAt)
		}
		row(tw, x.ExecutionID, x.WorkflowName, x.WorkflowID, x.State, stamp(x.CreatedAt), completed)
	}
	if p.NextCursor != "" {
		fmt.Fprintf(tw, "\nnext page: --cursor %s\n", p.NextCursor)
	}
	listFooter(tw, p)
}

// listFooter shows the counts by state (when asked) and which shards a
// partial answer is missing.
func listFooter(tw *tabwriter.Writer, p *client.ListPage) {
	if len(p.Counts) > 0 {
		var parts []string
		for _, st := range slices.Sorted(maps.Keys(p.Counts)) {
			parts = append(parts, fmt.Sprintf("%s %d", st, p.Counts[st]))
		}
		fmt.Fprintf(tw, "\ncounts: %s\n", strings.Join(parts, ", "))
	}
	if p.Status == "partial" {
		fmt.Fprintf(tw, "\npartial: shards %s could not be read\n", shardList(p.UnavailableShards))
	}
}

// membersTable lists the members by node id; " *" marks the node that
// answered.
func membersTable(tw *tabwriter.Writer, members []client.Member) {
	members = slices.SortedFunc(slices.Values(members), func(a, b client.Member) int { return cmp.Compare(a.NodeID, b.NodeID) })
	row(tw, "NODE", "STATE", "API", "GOSSIP", "SHARDS")
	for _, m := range members {
		node := m.NodeID
		if m.Self {
			node += " *"
		}
		row(tw, node, m.State, dash(m.APIAddr), dash(m.GossipAddr), shardList(m.Shards))
	}
}

// shardList is "0,2,5", or "-" for none.
func shardList(shards []uint16) string {
	if len(shards) == 0 {
		return "-"
	}
	ids := make([]string, len(shards))
	for i, s := range slices.Sorted(slices.Values(shards)) {
		ids[i] = fmt.Sprint(s)
	}
	return strings.Join(ids, ",")
}

// dash stands in for an empty cell.
func dash(s string) string { return cmp.Or(s, "-") }

func optionalText(tw *tabwriter.Writer, label, s string) {
	if s != "" {
		kv(tw, label, s)
	}
}

func optionalJSON(tw *tabwriter.Writer, label string, raw json.RawMessage) {
	if !isNull(raw) {
		kv(tw, label, jsonCell(raw, 0))
	}
}

// jsonCell compacts raw for a table cell, cut to limit runes (0: no limit).
func jsonCell(raw json.RawMessage, limit int) string {
	if isNull(raw) {
		return "-"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	s := buf.String()
	if r := []rune(s); limit > 0 && len(r) > limit {
		return string(r[:limit-1]) + "…"
	}
	return s
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// stamp formats a time in UTC with milliseconds.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
