package deploytest

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The parts of a compose file the checks read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	User        string            `yaml:"user"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	NetworkMode string            `yaml:"network_mode"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Networks map[string]struct {
		IPv4Address string `yaml:"ipv4_address"`
	} `yaml:"networks"`
}

// agentFlags lists the flags of `harvestd agent` from its --help, each
// with whether it takes a value.
func agentFlags(t *testing.T) map[string]bool {
	t.Helper()
	harvestd := goBuild(t, t.TempDir(), "harvestd")
	out, err := exec.Command(harvestd, "agent", "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	flags := map[string]bool{}
	re := regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+)( value)?`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = m[2] != ""
	}
	require.Contains(t, flags, "bootstrap-expect", "flags parsed from --help: %v\n%s", flags, out)
	return flags
}

// parseArgs reads `agent --flag=value --flag value ...`, or the short form
// `--join=… --flag value ...` (no command word), into flag values, failing
// on flags harvestd agent does not have.
func parseArgs(t *testing.T, svc string, args []string, known map[string]bool) map[string][]string {
	t.Helper()
	require.NotEmpty(t, args, "%s: no command", svc)
	first := 0
	if args[0] == "agent" {
		first = 1
	}
	values := map[string][]string{}
	defer func() {
		if first == 0 {
			require.NotEmpty(t, values["join"], "%s: without the agent command word, --join selects the agent", svc)
		}
	}()
	for i := first; i < len(args); i++ {
		arg := args[i]
		require.True(t, strings.HasPrefix(arg, "--"), "%s: argument %q is not a flag", svc, arg)
		name, value, hasValue := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		takesValue, ok := known[name]
		require.True(t, ok, "%s: harvestd agent has no flag --%s", svc, name)
		require.True(t, takesValue, "%s: --%s takes no value", svc, name)
		if !hasValue {
			require.Less(t, i+1, len(args), "%s: --%s has no value", svc, name)
			i++
			value = args[i]
		}
		values[name] = append(values[name], value)
	}
	return values
}

// one is the single value of a flag that must be given once.
func one(t *testing.T, svc string, flags map[string][]string, name string) string {
	t.Helper()
	require.Len(t, flags[name], 1, "%s: want --%s exactly once", svc, name)
	return flags[name][0]
}

func splitHostPort(t *testing.T, what, value string) (string, int) {
	t.Helper()
	host, portText, err := net.SplitHostPort(value)
	require.NoError(t, err, "%s %q", what, value)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err, "%s %q", what, value)
	require.Positive(t, port, "%s %q", what, value)
	return host, port
}

func TestComposeFileMatchesHarvestdFlags(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.cluster.yml"))
	require.NoError(t, err)
	var cf composeFile
	require.NoError(t, yaml.Unmarshal(raw, &cf))
	known := agentFlags(t)

	pg, ok := cf.Services["postgres"]
	require.True(t, ok, "no postgres service")
	// The official image by default, replaceable through one variable
	// (a machine without a registry passes a locally made one).
	require.Regexp(t, `^\$\{HARVEST_POSTGRES_IMAGE:-postgres:[^}]+\}$`, pg.Image, "postgres runs the official image by default")
	pgUser, pgPassword := pg.Environment["POSTGRES_USER"], pg.Environment["POSTGRES_PASSWORD"]
	require.NotEmpty(t, pgUser)
	initDir := ""
	for _, v := range pg.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if strings.HasPrefix(dst, "/docker-entrypoint-initdb.d") {
			initDir = filepath.Join(root, src)
		}
	}
	require.NotEmpty(t, initDir, "postgres mounts no init scripts at /docker-entrypoint-initdb.d")
	initSQL := readDir(t, initDir)
	require.Contains(t, pg.Healthcheck.Test, "pg_isready")

	// The Dockerfile the nodes build: its runtime has what the health check calls.
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/harvestd", "./cmd/harvestctl", "USER harvest", "ENTRYPOINT [\"harvestd\"]"} {
		require.Contains(t, string(dockerfile), want, "Dockerfile")
	}

	require.Len(t, cf.Networks, 1, "one network")
	var netName string
	var subnet netip.Prefix
	for name, n := range cf.Networks {
		netName = name
		require.Len(t, n.IPAM.Config, 1, "network %s: one subnet", name)
		subnet, err = netip.ParsePrefix(n.IPAM.Config[0].Subnet)
		require.NoError(t, err)
	}

	type node struct {
		svc, id, ip, volume  string
		httpPort, gossipPort int
		hostPort             string
		flags                map[string][]string
	}
	var nodes []node
	ips := map[string]string{}
	for name, s := range cf.Services {
		if name == secretsService {
			continue // no network: see checkSecretsService
		}
		n, ok := s.Networks[netName]
		require.True(t, ok, "%s is not on network %s", name, netName)
		ip, err := netip.ParseAddr(n.IPv4Address)
		require.NoError(t, err, "%s: ipv4_address", name)
		require.True(t, subnet.Contains(ip), "%s: %s is outside %s", name, ip, subnet)
		require.NotContains(t, ips, ip.String(), "%s and %s share an IP", name, ips[ip.String()])
		ips[ip.String()] = name
		if name == "postgres" {
			continue
		}
		require.NotNil(t, s.Build, "%s: builds the image (docker compose up --build)", name)
		flags := parseArgs(t, name, s.Command, known)
		nd := node{svc: name, ip: ip.String(), flags: flags, id: one(t, name, flags, "node-id")}

		// HTTP: bound on every interface, advertised under the service name,
		// published on the host, checked by the health check.
		_, nd.httpPort = splitHostPort(t, name+" --http-addr", one(t, name, flags, "http-addr"))
		advHost, advPort := splitHostPort(t, name+" --advertise-http", one(t, name, flags, "advertise-http"))
		require.Contains(t, []string{name, nd.ip}, advHost, "%s: --advertise-http is this node", name)
		require.Equal(t, nd.httpPort, advPort, "%s: --advertise-http port", name)
		require.Len(t, s.Ports, 1, "%s: publishes its HTTP port", name)
		// 127.0.0.1:HOST:CONTAINER: published on loopback only.
		hostIP, rest, ok := strings.Cut(s.Ports[0], ":")
		require.True(t, ok, "%s: ports %q: want 127.0.0.1:HOST:CONTAINER", name, s.Ports[0])
		require.Equal(t, "127.0.0.1", hostIP, "%s: ports %q: published on loopback only", name, s.Ports[0])
		hostPort, containerPort, ok := strings.Cut(rest, ":")
		require.True(t, ok, "%s: ports %q: want 127.0.0.1:HOST:CONTAINER", name, s.Ports[0])
		require.Equal(t, strconv.Itoa(nd.httpPort), containerPort, "%s: publishes the --http-addr port", name)
		nd.hostPort = hostPort
		require.Equal(t, "curl", s.Healthcheck.Test[1], "%s: health check (the image has curl)", name)
		require.Contains(t, s.Healthcheck.Test, "https://127.0.0.1:"+strconv.Itoa(nd.httpPort)+"/readyz", "%s: health check", name)
		require.Contains(t, s.Healthcheck.Test, one(t, name, flags, "tls-ca"), "%s: health check trusts the CA", name)

		// Gossip and raft advertise this node's fixed IP, on the bound port.
		_, nd.gossipPort = splitHostPort(t, name+" --gossip-addr", one(t, name, flags, "gossip-addr"))
		gHost, gPort := splitHostPort(t, name+" --advertise-gossip", one(t, name, flags, "advertise-gossip"))
		require.Equal(t, nd.ip, gHost, "%s: --advertise-gossip is its ipv4_address", name)
		require.Equal(t, nd.gossipPort, gPort, "%s: --advertise-gossip port", name)
		_, raftPort := splitHostPort(t, name+" --raft-addr", one(t, name, flags, "raft-addr"))
		rHost, rPort := splitHostPort(t, name+" --advertise-raft", one(t, name, flags, "advertise-raft"))
		require.Equal(t, nd.ip, rHost, "%s: --advertise-raft is its ipv4_address", name)
		require.Equal(t, raftPort, rPort, "%s: --advertise-raft port", name)

		// A named volume of its own at --data-dir.
		dataDir := one(t, name, flags, "data-dir")
		for _, v := range s.Volumes {
			src, dst, _ := strings.Cut(v, ":")
			if strings.TrimSuffix(dst, ":rw") == dataDir {
				nd.volume = src
			}
		}
		require.NotEmpty(t, nd.volume, "%s: no volume at --data-dir %s", name, dataDir)
		require.Contains(t, cf.Volumes, nd.volume, "%s: volume %s is not a named volume", name, nd.volume)
		require.Equal(t, "service_healthy", s.DependsOn["postgres"].Condition, "%s: waits for postgres", name)
		checkNodeSecrets(t, name, s, flags)
		nodes = append(nodes, nd)
	}
	require.Len(t, nodes, 3, "three harvestd nodes")
	checkSecretsService(t, cf, raw)
	slices.SortFunc(nodes, func(a, b node) int { return strings.Compare(a.svc, b.svc) })

	bySvc := map[string]node{}
	for _, nd := range nodes {
		bySvc[nd.svc] = nd
	}
	seen := map[string]map[string]string{"node id": {}, "volume": {}, "host port": {}}
	for _, nd := range nodes {
		for what, v := range map[string]string{"node id": nd.id, "volume": nd.volume, "host port": nd.hostPort} {
			require.NotContains(t, seen[what], v, "%s and %s share the %s %s", nd.svc, seen[what][v], what, v)
			seen[what][v] = nd.svc
		}
		require.Equal(t, "3", one(t, nd.svc, nd.flags, "bootstrap-expect"), "%s: --bootstrap-expect", nd.svc)
		// Joins name the other nodes' gossip addresses by service name.
		var joins []string
		for _, v := range nd.flags["join"] {
			joins = append(joins, strings.Split(v, ",")...)
		}
		require.NotEmpty(t, joins, "%s: no --join", nd.svc)
		for _, j := range joins {
			host, port := splitHostPort(t, nd.svc+" --join", j)
			peer, ok := bySvc[host]
			require.True(t, ok, "%s: --join %s is not a harvestd service", nd.svc, j)
			require.NotEqual(t, nd.svc, host, "%s: joins itself", nd.svc)
			require.Equal(t, peer.gossipPort, port, "%s: --join %s: %s gossips on %d", nd.svc, j, host, peer.gossipPort)
		}
		// The same shards everywhere, each a database the init script creates.
		require.Equal(t, nodes[0].flags["shard"], nd.flags["shard"], "%s: --shard differs from %s", nd.svc, nodes[0].svc)
		// The same secrets everywhere.
		for f := range secretFlags {
			require.Equal(t, nodes[0].flags[f], nd.flags[f], "%s: --%s differs from %s", nd.svc, f, nodes[0].svc)
		}
	}
	require.Equal(t, []string{"7231", "7232", "7233"}, []string{nodes[0].hostPort, nodes[1].hostPort, nodes[2].hostPort},
		"host ports of harvest1..3 (the README uses them)")

	shardIDs := map[string]bool{}
	for _, entry := range nodes[0].flags["shard"] {
		id, dsn, ok := strings.Cut(entry, "=")
		require.True(t, ok, "--shard %q: want id=DSN", entry)
		require.NotContains(t, shardIDs, id, "shard %s listed twice", id)
		shardIDs[id] = true
		u, err := url.Parse(dsn)
		require.NoError(t, err, "shard %s DSN", id)
		require.Equal(t, "postgres", u.Hostname(), "shard %s: DSN host is the postgres service", id)
		require.Equal(t, pgUser, u.User.Username(), "shard %s: DSN user is POSTGRES_USER", id)
		password, _ := u.User.Password()
		require.Equal(t, pgPassword, password, "shard %s: DSN password is POSTGRES_PASSWORD", id)
		db := strings.TrimPrefix(u.Path, "/")
		require.Regexp(t, `(?i)CREATE DATABASE\s+"?`+regexp.QuoteMeta(db)+`"?\s*;`, initSQL, "shard %s: the init script creates %s", id, db)
	}
	require.Len(t, shardIDs, 2, "two shards")
}

// readDir concatenates the files of dir.
func readDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		b.Write(data)
	}
	return b.String()
}
