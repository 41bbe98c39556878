package loop

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// Nudge wakes the loop waiting on ch, unless it has a wake-up pending
// already; it never blocks.
func Nudge(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Drain calls step while it finds more work, then waits for a nudge on
// wake or the poll tick (every), until ctx ends. More work nudges wake
// again, so that an idle peer on the same channel joins in. A failed
// step is logged and waits like an idle one.
func Drain(ctx context.Context, wake chan struct{}, every time.Duration, log zerolog.Logger, step func(context.Context) (bool, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		found, err := step(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn().Err(err).Msg("shard loop step failed")
		}
		if found && err == nil {
			Nudge(wake)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
	}
}
