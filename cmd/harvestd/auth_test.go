package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecurityFlagErrors: agent without its cluster key, authentication
// off where others can reach the node, tokens without the raft catalog
// and unknown modes fail before anything starts, with exit status 1 and
// one line naming the flag. No message shows a secret.
func TestSecurityFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := writeClusterKey(t, dir)
	const shard = "0=postgres://127.0.0.1:1/none"
	raft := []string{"--raft-addr", "127.0.0.1:0", "--bootstrap-expect", "1"}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	const shortKey = "c2hvcnQga2V5" // base64 of "short key"
	shortKeyFile := write("short.key", shortKey+"\n")
	const badToken = "hvt_not-a-token-secret"
	badTokenFile := write("bad.token", badToken+"\n")

	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"AgentWithoutClusterKey", append([]string{"agent"}, raft...), nil,
			"--cluster-key-file is required: every node of a cluster needs the same cluster key"},
		{"AgentWithoutClusterKeyStaticShards", []string{"agent", "--shard", shard, "--auth", "off"}, nil,
			"--cluster-key-file is required"},
		{"AgentClusterKeyFileMissing", append([]string{"agent", "--cluster-key-file", filepath.Join(dir, "none.key")}, raft...), nil,
			"read cluster key: open " + filepath.Join(dir, "none.key")},
		{"AgentClusterKeyFromEnvTooShort", append([]string{"agent"}, raft...), []string{"HARVEST_CLUSTER_KEY_FILE=" + shortKeyFile},
			"cluster key file " + shortKeyFile + ": line 1: cluster key must be at least 32 bytes"},
		{"AgentTokensWithStaticShards", []string{"agent", "--cluster-key-file", key, "--shard", shard}, nil,
			"--auth tokens keeps tokens in the raft catalog, and this agent has static --shard lists: start a raft catalog (--bootstrap-expect) or, on a private network only, use --auth off"},
		{"AgentExplicitTokensWithStaticShards", []string{"agent", "--cluster-key-file", key, "--shard", shard, "--auth", "tokens"}, nil,
			"--auth tokens keeps tokens in the raft catalog"},
		{"AgentAuthBogus", append([]string{"agent", "--cluster-key-file", key, "--auth", "bogus"}, raft...), nil,
			`--auth "bogus": want tokens or off`},
		{"AgentAuthBogusFromEnv", append([]string{"agent", "--cluster-key-file", key}, raft...), []string{"HARVEST_AUTH=bogus"},
			`--auth "bogus": want tokens or off`},
		{"AgentInitialTokenFileMissing", append([]string{"agent", "--cluster-key-file", key, "--initial-token-file", filepath.Join(dir, "none.token")}, raft...), nil,
			"--initial-token-file: open " + filepath.Join(dir, "none.token")},
		{"AgentInitialTokenMalformed", append([]string{"agent", "--cluster-key-file", key, "--initial-token-file", badTokenFile}, raft...), nil,
			"--initial-token-file " + badTokenFile + ": malformed token: want hvt_<16 hex>_<64 hex>"},
		{"DevAuthOffOnEveryInterface", []string{"dev", "--auth", "off", "--http-addr", "0.0.0.0:0"}, nil,
			"--auth off lets anyone who reaches 0.0.0.0:0 do anything: use it on a loopback --http-addr only, or run with --auth tokens"},
		{"DevDefaultOffOnEveryInterface", []string{"dev", "--http-addr", "0.0.0.0:0"}, nil,
			"--auth off lets anyone who reaches 0.0.0.0:0 do anything"},
		{"DevAuthOffOnIPv6Wildcard", []string{"dev", "--auth", "off", "--http-addr", "[::]:0"}, nil,
			"--auth off lets anyone who reaches [::]:0 do anything"},
		{"DevAuthBogus", []string{"dev", "--auth", "bogus"}, nil, `--auth "bogus": want tokens or off`},
		{"DevInitialTokenMalformed", []string{"dev", "--auth", "tokens", "--initial-token-file", badTokenFile}, nil,
			"--initial-token-file " + badTokenFile + ": malformed token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{tc.args[0], "--data-dir", filepath.Join(t.TempDir(), "data")}, tc.args[1:]...)
			if tc.args[0] == "agent" {
				args = append(args, "--gossip-addr", "127.0.0.1:0")
			}
			if !strings.Contains(strings.Join(tc.args, " "), "--http-addr") {
				args = append(args, "--http-addr", "127.0.0.1:0")
			}
			stderr, err := runToExitEnv(t, tc.env, args...)
			requireFailed(t, err, stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, strings.TrimSpace(stderr), "\n", "one line")
			for _, secret := range []string{shortKey, badToken} {
				require.NotContains(t, stderr, secret, "no secret in the message")
			}
		})
	}
}
