package batchop

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/shardapi"
)

func TestPace(t *testing.T) {
	for _, c := range []struct {
		name string
		rate float64
		n    int
		took time.Duration
		size int
		wait time.Duration
	}{
		{"ASecondsWorth", 50, 50, 200 * time.Millisecond, 50, 800 * time.Millisecond},
		{"SlowerThanTheRate", 50, 50, 2 * time.Second, 50, -time.Second},
		{"BelowOneASecond", 0.5, 1, 0, 1, 2 * time.Second},
		{"AboveTheLargestPage", 10000, 200, 0, MaxPage, 20 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.size, pageSize(c.rate))
			require.Equal(t, c.wait, pause(c.rate, c.n, c.took))
		})
	}
}

func TestCounts(t *testing.T) {
	var c Counts
	for _, o := range []outcome{{done: true}, {}, {err: &shardapi.TerminalError{State: shardapi.StateCompleted}},
		{err: fmt.Errorf("gone: %w", shardapi.ErrNotFound)}, {done: true}} {
		require.NoError(t, c.count(o))
	}
	require.Equal(t, Counts{Done: 2, Skipped: 2, Failed: 1, LastError: "gone: not found"}, c)
	require.Error(t, c.count(outcome{err: errors.New("owner unreachable")}), "an error a retry may cure fails the page")

	var p Progress
	p.add(c)
	p.add(Counts{Done: 3})
	require.Equal(t, Progress{Matched: 8, Done: 5, Skipped: 2, Failed: 1, LastError: "gone: not found", Pages: 2}, p)
}
