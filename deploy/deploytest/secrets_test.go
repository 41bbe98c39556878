package deploytest

import (
	"crypto/x509"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/tlsconf"
)

// Secrets in docker-compose.cluster.yml: a one-shot service writes them
// into a volume every node mounts read-only.
const (
	secretsService = "harvest-secrets"
	secretsVolume  = "harvest-secrets"
	// harvestUID owns the files: the Dockerfile's user harvest.
	harvestUID = 10001
)

// secretFlags are the flags every agent needs a file for, by the file's
// base name in the secrets volume.
var secretFlags = map[string]string{
	"cluster-key-file":   "cluster.key",
	"initial-token-file": "admin.token",
	"tls-cert":           "certs/node.pem",
	"tls-key":            "certs/node-key.pem",
	"tls-ca":             "certs/ca.pem",
}

// composeHosts are the names and addresses the nodes reach each other at
// (--advertise-http, --advertise-raft): the node certificate names them.
var composeHosts = []string{"harvest1", "harvest2", "harvest3", "172.28.0.11", "172.28.0.12", "172.28.0.13"}

// literalSecret matches a token or a base64 run long enough to be a
// cluster key written into a file that must hold none.
var literalSecret = regexp.MustCompile(`hvt_[0-9a-f]{16}_[0-9a-f]{64}|[A-Za-z0-9+/]{43}=`)

// checkNodeSecrets requires a harvestd node to read --cluster-key-file
// and --initial-token-file from the secrets volume, mounted read-only,
// and to start only once the secrets service has written them.
func checkNodeSecrets(t *testing.T, svc string, s composeService, flags map[string][]string) {
	t.Helper()
	mounts := map[string]string{} // mount point -> volume[:mode]
	for _, v := range s.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		mounts[strings.TrimSuffix(strings.TrimSuffix(dst, ":ro"), ":rw")] = v
		if src == secretsVolume {
			require.True(t, strings.HasSuffix(v, ":ro"), "%s: mounts %s read-only, got %q", svc, secretsVolume, v)
		}
	}
	for flag, rel := range secretFlags {
		file := one(t, svc, flags, flag)
		dir, ok := strings.CutSuffix(file, "/"+rel)
		require.True(t, ok, "%s: --%s %s is the %s the secrets service writes", svc, flag, file, rel)
		v, ok := mounts[dir]
		require.True(t, ok, "%s: --%s %s is on no volume", svc, flag, file)
		require.True(t, strings.HasPrefix(v, secretsVolume+":"), "%s: --%s %s is not on the volume %s", svc, flag, file, secretsVolume)
	}
	require.NotContains(t, flags, "gossip-key", "%s: gossip is keyed from the cluster key, not a key in this file", svc)
	require.Equal(t, "service_completed_successfully", s.DependsOn[secretsService].Condition,
		"%s: starts once %s has written the secrets (and lets up --wait finish)", svc, secretsService)
}

// checkSecretsService requires the one-shot service that writes the
// secrets, and no secret in the compose file itself.
func checkSecretsService(t *testing.T, cf composeFile, raw []byte) {
	t.Helper()
	require.Empty(t, literalSecret.FindAll(raw, -1), "docker-compose.cluster.yml holds what looks like a secret")
	s, ok := cf.Services[secretsService]
	require.True(t, ok, "no %s service", secretsService)
	require.Contains(t, cf.Volumes, secretsVolume)
	require.Equal(t, "none", s.NetworkMode, "%s needs no network", secretsService)
	require.Len(t, s.Volumes, 1, "%s: mounts the secrets volume only", secretsService)
	src, dir, _ := strings.Cut(s.Volumes[0], ":")
	require.Equal(t, secretsVolume, src)
	require.False(t, strings.Contains(dir, ":"), "%s: mounts %s read-write", secretsService, secretsVolume)
	require.Equal(t, []string{"/bin/sh", "-ec"}, s.Entrypoint, "%s: runs its command as a shell script", secretsService)
	require.Len(t, s.Command, 1, "%s: the script is one command argument", secretsService)
	script := s.Command[0]
	require.Contains(t, script, "cd "+dir+"\n", "%s: writes into the secrets volume", secretsService)
	for _, rel := range secretFlags {
		top, _, _ := strings.Cut(rel, "/") // certs/ holds what harvestctl certs create writes
		require.Contains(t, script, top, "%s: writes %s", secretsService, rel)
	}
	runSecretsScript(t, dir, script)
}

// runSecretsScript runs the secrets service's script on this machine,
// in a directory standing for the volume mounted at dir: it must write
// a valid key and token, owned by harvest and private, and keep them when
// run again. The script chowns, so it runs only as root.
func runSecretsScript(t *testing.T, dir, script string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: the secrets script (which chowns to harvest) is checked but not run")
		return
	}
	tmp := t.TempDir()
	// Compose turns $$ into $; the volume is the temporary directory. The
	// image has harvestctl on its PATH.
	local := strings.ReplaceAll(strings.ReplaceAll(script, "$$", "$"), "cd "+dir+"\n", "cd "+tmp+"\n")
	bin := t.TempDir()
	goBuild(t, bin, "harvestctl")
	run := func() {
		cmd := exec.Command("/bin/sh", "-ec", local)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "secrets script: %s", out)
	}
	run()
	first := map[string]string{}
	for _, base := range secretFlags {
		p := filepath.Join(tmp, base)
		info, err := os.Stat(p)
		require.NoError(t, err, "the script writes %s", base)
		require.Equal(t, fs.FileMode(0o400), info.Mode().Perm(), "%s mode", base)
		require.Equal(t, uint32(harvestUID), info.Sys().(*syscall.Stat_t).Uid, "%s belongs to harvest", base)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		first[base] = string(data)
	}
	requireClusterKeyFile(t, filepath.Join(tmp, "cluster.key"))
	requireTokenFile(t, filepath.Join(tmp, "admin.token"))
	requireNodeCert(t, filepath.Join(tmp, "certs"), composeHosts)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, entries, 3, "the script leaves only the secrets (cluster.key, admin.token, certs/): %v", entries)

	run()
	for base, want := range first {
		data, err := os.ReadFile(filepath.Join(tmp, base))
		require.NoError(t, err)
		require.Equal(t, want, string(data), "a second run keeps %s", base)
	}
}

// requireNodeCert requires dir's node certificate to verify against its CA
// for every host, as server and as client, and harvestd to load the files.
func requireNodeCert(t *testing.T, dir string, hosts []string) {
	t.Helper()
	files := tlsconf.Files{CertFile: filepath.Join(dir, "node.pem"), KeyFile: filepath.Join(dir, "node-key.pem"),
		CAFile: filepath.Join(dir, "ca.pem")}
	m, err := tlsconf.Load(files)
	require.NoError(t, err, "harvestd loads the certificates")
	ca, err := os.ReadFile(files.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	for _, h := range hosts {
		_, err := m.Leaf().Verify(x509.VerifyOptions{DNSName: h, Roots: pool,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
		require.NoError(t, err, "the node certificate for %s", h)
	}
}

// requireClusterKeyFile requires path to hold a cluster key harvestd
// accepts.
func requireClusterKeyFile(t *testing.T, path string) {
	t.Helper()
	_, err := clusterkey.Load(path)
	require.NoError(t, err)
}

// requireTokenFile requires path to hold a well-formed token and returns
// it.
func requireTokenFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	token := strings.TrimSpace(string(data))
	_, err = auth.Parse(token)
	require.NoError(t, err, "token file %s", path)
	return token
}
