package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestZeroLoggerWritesToStderr swaps os.Stderr, so it is not parallel.
func TestZeroLoggerWritesToStderr(t *testing.T) {
	b := setup(t)
	cfg := b.cfg
	cfg.Logger = zerolog.Logger{}

	t.Run("NodeStartedLine", func(t *testing.T) {
		out := captureStderr(t, func() {
			n, err := New(cfg, b.reg)
			require.NoError(t, err)
			require.NoError(t, n.Start(ctxT(t)))
			require.NoError(t, n.Stop(context.Background()))
		})
		line := lineWith(out, "message", "node started")
		require.NotNil(t, line, "no node started line in:\n%s", out)
		require.Equal(t, "info", line["level"])
		require.Equal(t, "node", line["component"])
		require.NotEmpty(t, line["time"])
		require.Nil(t, lineWith(out, "level", "debug"), "info and above only")
	})

	t.Run("NopDiscards", func(t *testing.T) {
		quiet := cfg
		quiet.Logger = zerolog.Nop()
		out := captureStderr(t, func() {
			n, err := New(quiet, b.reg)
			require.NoError(t, err)
			require.NoError(t, n.Start(ctxT(t)))
			require.NoError(t, n.Stop(context.Background()))
		})
		require.Nil(t, lineWith(out, "message", "node started"))
	})
}

// captureStderr runs f with os.Stderr on a pipe and returns what was
// written.
func captureStderr(t *testing.T, f func()) []byte {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(r)
		done <- all
	}()
	defer func() { os.Stderr = saved }()
	f()
	require.NoError(t, w.Close())
	return <-done
}

// lineWith returns the first JSON line of out whose field is value, or
// nil.
func lineWith(out []byte, field, value string) map[string]any {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line[field] == value {
			return line
		}
	}
	return nil
}
