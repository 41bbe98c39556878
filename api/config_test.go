package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		err  string
	}{
		{name: "Defaults", cfg: Config{}.withDefaults()},
		{name: "WaitAtHalfTheForwardTimeout", cfg: Config{ResultWaitMax: forwardTimeout / 2}},
		{name: "NegativeLimit", cfg: Config{MaxBodyBytes: -1}, err: "api config: limits must not be negative"},
		{name: "WaitOutlivesForwarding", cfg: Config{ResultWaitMax: forwardTimeout/2 + time.Second},
			err: "api config: result wait max 31s is over 30s, half the forwarding timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, c.err)
		})
	}
}
