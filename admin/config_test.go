package admin

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
)

func TestConfig(t *testing.T) {
	t.Parallel()

	valid := func() Config {
		return Config{NodeID: "n1", DataDir: "/tmp/x", BindAddr: "127.0.0.1:0", ClusterKey: clusterkeytest.Key()}
	}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{name: "Valid", mod: func(*Config) {}},
		{name: "NoNodeID", mod: func(c *Config) { c.NodeID = "" }, wantErr: "node id is required"},
		{name: "NoClusterKey", mod: func(c *Config) { c.ClusterKey = clusterkey.Key{} }, wantErr: "cluster key is required"},
		{name: "NoDataDir", mod: func(c *Config) { c.DataDir = "" }, wantErr: "data dir is required"},
		{name: "BadBindAddr", mod: func(c *Config) { c.BindAddr = "nope" }, wantErr: "bind addr"},
		{name: "UnspecifiedAdvertise", mod: func(c *Config) { c.AdvertiseAddr = "0.0.0.0:8300" }, wantErr: "specific IP"},
		{name: "Advertise", mod: func(c *Config) { c.AdvertiseAddr = "10.0.0.1:8300" }},
		{name: "FiveVoters", mod: func(c *Config) { c.MaxVoters = 5; c.BootstrapExpect = 5 }},
		{name: "SixVoters", mod: func(c *Config) { c.MaxVoters = 6 }, wantErr: "max voters 6"},
		{name: "ExpectAboveMaxVoters", mod: func(c *Config) { c.BootstrapExpect = 4 }, wantErr: "bootstrap expect 4"},
		{name: "ReservedShardID", mod: func(c *Config) { c.InitialShards = map[uint16]string{65535: "x"} }, wantErr: "shard id 65535"},
		{name: "EmptyDSN", mod: func(c *Config) { c.InitialShards = map[uint16]string{1: ""} }, wantErr: "empty dsn"},
		{name: "NegativeWindow", mod: func(c *Config) { c.Settings.IdempotencyWindow = -time.Second }, wantErr: "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tt.mod(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		override := raft.DefaultConfig()
		override.ShutdownOnRemove = true
		cfg := valid()
		cfg.Raft = override
		got := cfg.withDefaults()
		require.Equal(t, MaxVotersDefault, got.MaxVoters)
		require.Equal(t, ReconcileIntervalDefault, got.ReconcileInterval)
		require.Equal(t, IdempotencyWindowDefault, got.Settings.IdempotencyWindow)
		require.Equal(t, raft.ServerID("n1"), got.Raft.LocalID)
		require.False(t, got.Raft.ShutdownOnRemove)
		require.True(t, override.ShutdownOnRemove, "the caller's raft config is not modified")
	})
}
