package membership

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() Config {
		return Config{NodeID: "n1", Meta: Meta{APIAddr: "10.0.0.1:7233", RaftAddr: "10.0.0.1:7234", Version: "1.0.0"}}
	}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string // empty: valid
	}{
		{name: "Minimal", mod: func(*Config) {}},
		{name: "Full", mod: func(c *Config) {
			c.BindAddr, c.BindPort, c.AdvertiseAddr, c.AdvertisePort = "0.0.0.0", 7946, "10.0.0.1", 7947
			c.Join, c.GossipKey, c.Profile = []string{"10.0.0.2:7946", "seed.example:7946"}, make([]byte, 24), ProfileLocal
			c.Meta.NodeID = "n1"
		}},
		{name: "NoNodeID", mod: func(c *Config) { c.NodeID = "" }, wantErr: "node id"},
		{name: "NodeIDWithSpace", mod: func(c *Config) { c.NodeID = "a b" }, wantErr: "no spaces"},
		{name: "BindAddrNotIP", mod: func(c *Config) { c.BindAddr = "localhost" }, wantErr: "bind addr"},
		{name: "AdvertiseAddrNotIP", mod: func(c *Config) { c.AdvertiseAddr = "x" }, wantErr: "advertise addr"},
		{name: "BindPortRange", mod: func(c *Config) { c.BindPort = 65536 }, wantErr: "bind port"},
		{name: "AdvertisePortNegative", mod: func(c *Config) { c.AdvertisePort = -1 }, wantErr: "advertise port"},
		{name: "AdvertisePortWithoutAddr", mod: func(c *Config) { c.AdvertisePort = 7000 }, wantErr: "needs an advertise addr"},
		{name: "JoinWithoutPort", mod: func(c *Config) { c.Join = []string{"10.0.0.2"} }, wantErr: "join address"},
		{name: "NegativeInterval", mod: func(c *Config) { c.RejoinInterval = -1 }, wantErr: "must not be negative"},
		{name: "GossipKeyLength", mod: func(c *Config) { c.GossipKey = make([]byte, 10) }, wantErr: "invalid gossip key"},
		{name: "MetaOtherNode", mod: func(c *Config) { c.Meta.NodeID = "n2" }, wantErr: "differs from node id"},
		{name: "UnknownProfile", mod: func(c *Config) { c.Profile = "wan" }, wantErr: "profile"},
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

	t.Run("MetaTooLarge", func(t *testing.T) {
		t.Parallel()
		cfg := valid()
		cfg.Meta.APIAddr = strings.Repeat("a", MetaMaxSize)
		err := cfg.Validate()
		require.ErrorIs(t, err, ErrMetaTooLarge)
		var tooLarge *MetaTooLargeError
		require.True(t, errors.As(err, &tooLarge))
		require.Equal(t, MetaMaxSize, tooLarge.Limit)
		require.Greater(t, tooLarge.Size, MetaMaxSize)

		_, err = New(cfg)
		require.ErrorIs(t, err, ErrMetaTooLarge)
	})

	t.Run("MetaAtLimit", func(t *testing.T) {
		t.Parallel()
		cfg := valid()
		cfg.Meta = Meta{}
		base, err := encodeMeta(Meta{NodeID: cfg.NodeID}, true, nil)
		require.NoError(t, err)
		cfg.Meta.Version = strings.Repeat("v", MetaMaxSize-len(base)-len(`,"v":""`))
		require.NoError(t, cfg.Validate())
		cfg.Meta.Version += "v"
		require.ErrorIs(t, cfg.Validate(), ErrMetaTooLarge)
	})
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	got := Config{NodeID: "n1"}.withDefaults()
	require.Equal(t, BindAddrDefault, got.BindAddr)
	require.Zero(t, got.BindPort, "0 picks a free port")
	require.Equal(t, RejoinIntervalDefault, got.RejoinInterval)
	require.Equal(t, LeaveTimeoutDefault, got.LeaveTimeout)
	require.Equal(t, ReconnectTimeoutDefault, got.ReconnectTimeout)
	require.Equal(t, ProfileLAN, got.Profile)
	require.Equal(t, "n1", got.Meta.NodeID)

	mc := Config{NodeID: "n1", Profile: ProfileLocal, GossipKey: make([]byte, 16)}.withDefaults().memberlistConfig()
	require.Equal(t, "n1", mc.Name)
	require.Len(t, mc.Keyring.GetPrimaryKey(), 16)

	t.Run("GossipKeyFromClusterKey", func(t *testing.T) {
		t.Parallel()
		key := clusterkeytest.Key()
		got := Config{NodeID: "n1", ClusterKey: key}.withDefaults()
		require.Equal(t, key.Derive(clusterkey.LabelGossip), got.GossipKey)
		require.Len(t, got.memberlistConfig().Keyring.GetPrimaryKey(), 32, "AES-256")
		require.Equal(t, key.Derive(clusterkey.LabelMember), got.signKey())

		explicit := Config{NodeID: "n1", ClusterKey: key, GossipKey: make([]byte, 16)}.withDefaults()
		require.Equal(t, make([]byte, 16), explicit.GossipKey, "an explicit gossip key wins")
		require.Nil(t, Config{NodeID: "n1"}.withDefaults().signKey())
	})
	t.Run("EveryKeyOfARotationDecrypts", func(t *testing.T) {
		t.Parallel()
		ring := clusterkeytest.Other().Join(clusterkeytest.Key())
		mc := Config{NodeID: "n1", ClusterKey: ring}.withDefaults().memberlistConfig()
		require.Equal(t, ring.DeriveAll(clusterkey.LabelGossip), mc.Keyring.GetKeys())
		require.Equal(t, ring.Derive(clusterkey.LabelGossip), mc.Keyring.GetPrimaryKey())
	})
}

func TestParseGossipKey(t *testing.T) {
	t.Parallel()
	for _, n := range []int{16, 24, 32} {
		key, err := ParseGossipKey(" " + base64.StdEncoding.EncodeToString(make([]byte, n)) + "\n")
		require.NoError(t, err)
		require.Len(t, key, n)
	}
	_, err := ParseGossipKey(base64.StdEncoding.EncodeToString(make([]byte, 20)))
	require.ErrorIs(t, err, ErrInvalidGossipKey)
	_, err = ParseGossipKey("not base64!")
	require.ErrorIs(t, err, ErrInvalidGossipKey)
}
