package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAgentFlagErrors(t *testing.T) {
	t.Parallel()
	const shard = "0=postgres://127.0.0.1:1/none"
	// What passes the security checks, for the checks after them (see
	// TestSecurityFlagErrors).
	secure := []string{"--cluster-key-file", writeClusterKey(t, t.TempDir()), "--auth", "off"}
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
		{"UnparsableDSN", append([]string{"--shard", "0=postgres://u:pw@h:notaport/db"}, secure...), nil, "dsn of shard 0"},
		{"GossipKeyNotBase64", []string{"--shard", shard, "--gossip-key", "not base64!"}, nil, "--gossip-key: invalid gossip key"},
		{"GossipKeyTooShort", []string{"--shard", shard, "--gossip-key", "AAAAAAAAAAA="}, nil, "8 bytes, want 16, 24 or 32"},
		{"GossipAddrHostName", []string{"--shard", shard, "--gossip-addr", "localhost:7946"}, nil, `--gossip-addr "localhost:7946": "localhost" is not an IP address`},
		{"GossipAddrNoPort", []string{"--shard", shard, "--gossip-addr", "127.0.0.1"}, nil, `--gossip-addr "127.0.0.1": want host:port`},
		{"GossipAddrBadPort", []string{"--shard", shard, "--gossip-addr", "127.0.0.1:99999"}, nil, `port "99999" is not a number from 0 to 65535`},
		{"AdvertiseGossip", []string{"--shard", shard, "--advertise-gossip", "10.0.0.1"}, nil, `--advertise-gossip "10.0.0.1": want host:port`},
		{"Join", []string{"--shard", shard, "--join", "127.0.0.1:7946,nohost"}, nil, `--join "nohost": want host:port`},
		{"GossipProfile", []string{"--shard", shard, "--gossip-profile", "wan"}, nil, `--gossip-profile "wan": want lan or local`},
		{"WildcardHTTPWithoutAdvertise", append([]string{"--shard", shard, "--http-addr", "0.0.0.0:7233"}, secure...), nil, "binds every interface: set --advertise-http"},
		{"AdvertiseHTTP", append([]string{"--shard", shard, "--advertise-http", "nope"}, secure...), nil, `advertise http "nope"`},
		{"NodeID", append([]string{"--shard", shard, "--node-id", "a b"}, secure...), nil, "no spaces or control characters"},
		{"LogLevel", []string{"--shard", shard, "--log-level", "loud"}, nil, "--log-level"},
		{"RaftAddrWildcardByDefault", []string{"--bootstrap-expect", "3"}, nil,
			"--raft-addr 0.0.0.0:8300 binds every interface: set --advertise-raft to the IP:port other nodes reach this one at"},
		{"RaftAddrWildcardIPv6", []string{"--raft-addr", "[::]:8300"}, nil, "--raft-addr [::]:8300 binds every interface"},
		{"RaftAddrNoPort", []string{"--raft-addr", "127.0.0.1"}, nil, `--raft-addr "127.0.0.1": want host:port`},
		{"AdvertiseRaftHostName", []string{"--advertise-raft", "raft.example:8300"}, nil, `"raft.example" is not an IP address`},
		{"AdvertiseRaftWildcard", []string{"--advertise-raft", "0.0.0.0:8300"}, nil, "want a specific IP address and a non-zero port"},
		{"AdvertiseRaftPortZero", []string{"--advertise-raft", "10.0.0.1:0"}, nil, "want a specific IP address and a non-zero port"},
		{"BootstrapExpectNegative", []string{"--raft-addr", "127.0.0.1:0", "--bootstrap-expect", "-1"}, nil,
			"--bootstrap-expect -1: want 0 (join an existing cluster) to 3 (--max-voters)"},
		{"BootstrapExpectAboveMaxVoters", []string{"--raft-addr", "127.0.0.1:0", "--bootstrap-expect", "5"}, nil,
			"--bootstrap-expect 5: want 0 (join an existing cluster) to 3 (--max-voters)"},
		{"BootstrapExpectNotANumber", []string{"--raft-addr", "127.0.0.1:0", "--bootstrap-expect", "three"}, nil, "bootstrap-expect"},
		{"BootstrapExpectFromEnv", nil, []string{"HARVEST_RAFT_ADDR=127.0.0.1:0", "HARVEST_BOOTSTRAP_EXPECT=7"}, "--bootstrap-expect 7"},
		{"MaxVotersEven", []string{"--raft-addr", "127.0.0.1:0", "--max-voters", "4"}, nil, "--max-voters 4: want 3 or 5"},
		{"DrainCheckInterval", []string{"--raft-addr", "127.0.0.1:0", "--drain-check-interval", "0s"}, nil,
			"--drain-check-interval 0s: must be positive"},
		{"BadShardWithRaft", []string{"--raft-addr", "127.0.0.1:0", "--shard", "x"}, nil, "--shard entry 1: want id=DSN"},
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
