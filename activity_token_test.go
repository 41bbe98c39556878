package harvest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestTaskTokenConcurrent: an activity may hand its context to goroutines
// (an errgroup calling the remote side): TaskToken mints one token per
// attempt however many call it at once.
func TestTaskTokenConcurrent(t *testing.T) {
	t.Run("concurrent callers get the one token", func(t *testing.T) {
		var mints atomic.Int32
		ac := NewActivityContext(context.Background(), ActivityInfo{}, nil, zerolog.Nop()).
			WithTaskToken(func(context.Context) (string, error) {
				return "hvtt_" + string(rune('a'+mints.Add(1))), nil
			})
		const callers = 8
		tokens := make([]string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				tok, err := ac.TaskToken()
				require.NoError(t, err)
				tokens[i] = tok
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, mints.Load(), "minted once")
		for _, tok := range tokens {
			require.Equal(t, tokens[0], tok)
		}
		require.True(t, ac.TokenMinted())
	})
}
