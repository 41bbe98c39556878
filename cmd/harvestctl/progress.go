package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/harvestd/harvest/client"
)

// Shape of the drain progress display.
const (
	// barWidth is the number of cells between the brackets.
	barWidth = 24
	// pollFailuresMax consecutive failed reads end --wait.
	pollFailuresMax = 3
)

// progress draws a drain's progress until the shard is read_only: one
// line re-drawn with \r on a terminal, one line per poll otherwise.
type progress struct {
	w   io.Writer
	tty bool
	// window is the idempotency window and since the drain's start: the
	// shard cannot be read_only before since+window.
	window time.Duration
	since  time.Time
	// drawn is the length of the line on the terminal; 0 when none.
	drawn int
}

// follow reads the shard every poll and draws it until it is read_only
// (nil), the drain is undone, ctx ends or reads keep failing.
func (p *progress) follow(ctx context.Context, api *client.Client, id uint16, poll time.Duration) error {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	failures := 0
	for {
		sh, err := api.Shard(ctx, id)
		if err == nil {
			failures = 0
			if done, err := p.draw(sh); done {
				return err
			}
		} else if failures++; failures >= pollFailuresMax {
			p.end()
			return fmt.Errorf("read shard %d: %w", id, err)
		}
		select {
		case <-ctx.Done():
			p.end()
			return fmt.Errorf("stopped waiting (%w); the drain goes on: see harvestctl shard status %d", ctx.Err(), id)
		case <-tick.C:
		}
	}
}

// draw shows one reading of the shard; done when it is read_only (nil) or
// was changed again after the drain (an error).
func (p *progress) draw(sh *client.Shard) (done bool, err error) {
	switch {
	case sh.StateSince.Before(p.since):
		// A follower answered before it applied the drain.
		p.line(fmt.Sprintf("%s   0%%  shard %d: waiting for this node to apply the drain", bar(0), sh.ShardID))
		return false, nil
	case sh.State == client.ShardDraining:
		p.line(p.describe(sh))
		return false, nil
	case sh.State == client.ShardReadOnly:
		p.line(fmt.Sprintf("%s 100%%  shard %d is read_only: nothing placed on it is inside the window", bar(1), sh.ShardID))
		p.end()
		return true, nil
	}
	p.end()
	return true, fmt.Errorf("shard %d is %s: the drain was undone", sh.ShardID, sh.State)
}

// describe is the progress line of a draining shard.
func (p *progress) describe(sh *client.Shard) string {
	st := sh.Status
	if st == nil {
		return fmt.Sprintf("%s   ?%%  shard %d draining, unreachable: %s", bar(0), sh.ShardID, clean(sh.Error))
	}
	end := p.since.Add(p.window)
	if st.WindowPassesAt != nil && st.WindowPassesAt.After(end) {
		end = *st.WindowPassesAt
	}
	frac := 1.0
	if total := end.Sub(p.since); total > 0 {
		frac = min(max(float64(st.Now.Sub(p.since))/float64(total), 0), 1)
	}
	left := "waiting for the leader's drain check"
	if end.After(st.Now) {
		left = "read_only in about " + roughly(end.Sub(st.Now))
	}
	return fmt.Sprintf("%s %3d%%  shard %d draining: %d claims and %d runs in window, %d running; %s",
		bar(frac), int(frac*100), sh.ShardID, st.ClaimsInWindow, st.RunsInWindow, st.RunningExecutions, left)
}

// line draws s: over the previous line on a terminal, else on a new line.
// Display errors are ignored.
func (p *progress) line(s string) {
	if !p.tty {
		fmt.Fprintln(p.w, s)
		return
	}
	pad := max(p.drawn-len(s), 0)
	fmt.Fprint(p.w, "\r"+s+strings.Repeat(" ", pad))
	p.drawn = len(s)
}

// end moves past a line drawn on a terminal.
func (p *progress) end() {
	if p.tty && p.drawn > 0 {
		fmt.Fprintln(p.w)
		p.drawn = 0
	}
}

// bar is "[######------]" filled to frac (0..1).
func bar(frac float64) string {
	n := int(frac * barWidth)
	return "[" + strings.Repeat("#", n) + strings.Repeat("-", barWidth-n) + "]"
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
