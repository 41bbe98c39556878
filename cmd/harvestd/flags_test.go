package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgserver"
	"github.com/harvestd/harvest/node"
)

func TestNewLogger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, format, level, wantErr string
	}{
		{"JSONInfo", "json", "info", ""},
		{"ConsoleDebug", "console", "debug", ""},
		{"BadFormat", "xml", "info", "--log-format"},
		{"BadLevel", "json", "loud", "--log-level"},
		{"EmptyLevel", "json", "", "--log-level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := newLogger(tc.format, tc.level)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()

	t.Run("NoBinaries", func(t *testing.T) {
		t.Parallel()
		err := explain(fmt.Errorf("start managed postgres: %w", pgserver.ErrNoBinaries), node.Config{PGBinDir: "/opt/pg"})
		require.ErrorIs(t, err, pgserver.ErrNoBinaries)
		require.Contains(t, err.Error(), "in /opt/pg (--pg-bin-dir)")
		require.Contains(t, err.Error(), "--postgres")
		require.NotContains(t, err.Error(), "\n")
	})

	t.Run("DataDir", func(t *testing.T) {
		t.Parallel()
		err := explain(fmt.Errorf("%w: x is not a directory", node.ErrDataDir), node.Config{})
		require.ErrorIs(t, err, node.ErrDataDir)
		require.Contains(t, err.Error(), "--data-dir")
	})

	t.Run("OtherErrorsUnchanged", func(t *testing.T) {
		t.Parallel()
		other := errors.New("boom")
		require.Equal(t, other, explain(other, node.Config{}))
		require.NoError(t, explain(nil, node.Config{}))
	})
}
