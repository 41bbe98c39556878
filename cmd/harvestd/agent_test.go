package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitShardEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
	}{
		{"OnePerFlag", []string{"0=postgres://h/a", "1=postgres://h/b"}, []string{"0=postgres://h/a", "1=postgres://h/b"}},
		{"CommaList", []string{"0=postgres://h/a, 1=postgres://h/b,"}, []string{"0=postgres://h/a", "1=postgres://h/b"}},
		{"CommasInsideADSN", []string{"0=postgres://u:p,w@h1:5432,h2:5433/a,1=host=h1,h2 port=5432,5433 dbname=b"},
			[]string{"0=postgres://u:p,w@h1:5432,h2:5433/a", "1=host=h1,h2 port=5432,5433 dbname=b"}},
		{"KeywordDSN", []string{"7=host=/tmp dbname='x'"}, []string{"7=host=/tmp dbname='x'"}},
		{"NoIDStaysOneEntry", []string{"postgres://h/a?sslmode=disable"}, []string{"postgres://h/a?sslmode=disable"}},
		{"Empty", []string{"", " , "}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, splitShardEntries(tc.values))
		})
	}
}

func TestParseShards(t *testing.T) {
	t.Parallel()
	got, err := parseShards([]string{"0=postgres://h/a,1=postgres://h/b", " 65534 = host=/tmp "})
	require.NoError(t, err)
	require.Equal(t, map[uint16]string{0: "postgres://h/a", 1: "postgres://h/b", 65534: "host=/tmp"}, got)
}

func TestParseJoin(t *testing.T) {
	t.Parallel()
	got, err := parseJoin([]string{"10.0.0.1:7946, seed.example:7946", "[::1]:7000", ""})
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.1:7946", "seed.example:7946", "[::1]:7000"}, got)
	for _, bad := range []string{"nohost", ":7946", "h:0", "h:x"} {
		_, err := parseJoin([]string{bad})
		require.ErrorContains(t, err, "--join", bad)
	}
}

// TestAgentFlagErrors: bad agent flags fail before anything starts, with
// exit status 1 and one line naming the flag.
func TestAgentFlagErrors(t *testing.T) {
	t.Parallel()
	const shard = "0=postgres://127.0.0.1:1/none"
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"NoShard", nil, nil, "harvestd: --shard is required"},
		{"ShardWithoutID", []string{"--shard", "postgres://u:pw@h/db?sslmode=disable"}, nil, "--shard entry 1: want id=DSN"},
		{"ShardIDTooLarge", []string{"--shard", "70000=postgres://h/db"}, nil, "shard id 70000: want 0 to 65534"},
		{"ReservedShardID", []string{"--shard", "65535=postgres://h/db"}, nil, "shard id 65535: want 0 to 65534"},
		{"EmptyDSN", []string{"--shard", shard, "--shard", "1="}, nil, "--shard entry 2: shard 1: empty DSN"},
		{"DuplicateShard", []string{"--shard", shard, "--shard", "0=postgres://h/other"}, nil, "--shard: shard 0 is listed twice"},
		{"DuplicateShardInEnvList", nil, []string{"HARVEST_SHARD=0=postgres://h/a,0=postgres://h/b"}, "--shard: shard 0 is listed twice"},
		{"UnparsableDSN", []string{"--shard", "0=postgres://u:pw@h:notaport/db"}, nil, "dsn of shard 0"},
		{"GossipKeyNotBase64", []string{"--shard", shard, "--gossip-key", "not base64!"}, nil, "--gossip-key: invalid gossip key"},
		{"GossipKeyTooShort", []string{"--shard", shard, "--gossip-key", "AAAAAAAAAAA="}, nil, "8 bytes, want 16, 24 or 32"},
		{"GossipAddrHostName", []string{"--shard", shard, "--gossip-addr", "localhost:7946"}, nil, `--gossip-addr "localhost:7946": "localhost" is not an IP address`},
		{"GossipAddrNoPort", []string{"--shard", shard, "--gossip-addr", "127.0.0.1"}, nil, `--gossip-addr "127.0.0.1": want host:port`},
		{"GossipAddrBadPort", []string{"--shard", shard, "--gossip-addr", "127.0.0.1:99999"}, nil, `port "99999" is not a number from 0 to 65535`},
		{"AdvertiseGossip", []string{"--shard", shard, "--advertise-gossip", "10.0.0.1"}, nil, `--advertise-gossip "10.0.0.1": want host:port`},
		{"Join", []string{"--shard", shard, "--join", "127.0.0.1:7946,nohost"}, nil, `--join "nohost": want host:port`},
		{"GossipProfile", []string{"--shard", shard, "--gossip-profile", "wan"}, nil, `--gossip-profile "wan": want lan or local`},
		{"WildcardHTTPWithoutAdvertise", []string{"--shard", shard, "--http-addr", "0.0.0.0:7233"}, nil, "binds every interface: set --advertise-http"},
		{"AdvertiseHTTP", []string{"--shard", shard, "--advertise-http", "nope"}, nil, `advertise http "nope"`},
		{"NodeID", []string{"--shard", shard, "--node-id", "a b"}, nil, "no spaces or control characters"},
		{"LogLevel", []string{"--shard", shard, "--log-level", "loud"}, nil, "--log-level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"agent", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0",
				"--gossip-addr", "127.0.0.1:0"}, tc.args...)
			stderr, err := runToExitEnv(t, tc.env, args...)
			requireFailed(t, err, stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, strings.TrimSpace(stderr), "\n", "one line")
			require.NotContains(t, stderr, "pw@", "no password in the message")
		})
	}
}
