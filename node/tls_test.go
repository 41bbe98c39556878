package node

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/internal/tlsconf/tlstest"
)

// TestClusterOverTLS: three nodes, each with its own certificate of one
// CA, whose raft transport runs over mutual TLS (the cluster forms and
// commits), whose API serves only TLS and whose forwarded requests travel
// over HTTPS; a peer with another CA, an expired certificate or another
// cluster key is refused at each hop; a certificate replaced and reloaded
// is served on each hop while the cluster keeps serving.
func TestClusterOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster")
	files := map[string]*tlsconf.Files{}
	for i := range 3 {
		f := ca.Node(t, fmt.Sprintf("n%d", i), time.Now().Add(time.Hour))
		files[fmt.Sprintf("n%d", i)] = &f
	}
	c := newRaftClusterWindows(t, 2, []time.Duration{time.Hour, time.Hour, time.Hour}, func(cfg *Config) { cfg.TLS = files[cfg.NodeID] })
	https := httpsClient(t, ca.File)
	post := func(hc *http.Client, url, body string) (int, error) {
		res, err := hc.Post(url, "application/json", bytes.NewBufferString(body))
		if err != nil {
			return 0, err
		}
		res.Body.Close()
		return res.StatusCode, nil
	}
	t.Run("StartsThroughEveryNode", func(t *testing.T) {
		forwarded := 0
		for i := range 12 {
			n := c.nodes[i%3]
			res, err := https.Post("https://"+n.Addr()+api.BasePath+"/workflows/noop_chain/start", "application/json",
				bytes.NewBufferString(fmt.Sprintf(`{"workflow_id":"tls-%d","input":{"activities":0}}`, i)))
			require.NoError(t, err)
			var body map[string]any
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			res.Body.Close()
			require.Equal(t, http.StatusCreated, res.StatusCode, "through %s: %v", n.NodeID(), body)
			if c.owner(shardOf(t, body["execution_id"])) != n {
				forwarded++
			}
		}
		require.Positive(t, forwarded, "some starts were forwarded to their owner over HTTPS")
		require.Equal(t, 12, c.runsCount(t, "workflow_id LIKE 'tls-%'"))
	})
	t.Run("EventStreamThroughANonOwner", func(t *testing.T) {
		res, err := https.Post("https://"+c.nodes[0].Addr()+api.BasePath+"/workflows/noop_chain/start?wait=20s", "application/json",
			bytes.NewBufferString(`{"workflow_id":"tls-stream","input":{"activities":0}}`))
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		res.Body.Close()
		var other *Node
		for _, n := range c.nodes {
			if n != c.owner(shardOf(t, body["execution_id"])) {
				other = n
			}
		}
		res, err = https.Get("https://" + other.Addr() + api.BasePath + "/workflows/" + fmt.Sprint(body["execution_id"]) + "/events/stream")
		require.NoError(t, err)
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, "forwarded to the owner over HTTPS: %s", raw)
		require.Contains(t, string(raw), "WorkflowCompleted", "the whole history")
		require.Contains(t, string(raw), "event: closed", "then the close")
	})
	t.Run("CatalogWriteThroughAFollower", func(t *testing.T) {
		var follower *Node
		for _, n := range c.nodes {
			if !n.admin.IsLeader() {
				follower = n
			}
		}
		status, err := post(https, "https://"+follower.Addr()+api.BasePath+"/admin/shards/1/drain", `{"force":true}`)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, status, "forwarded to the leader over HTTPS, committed over raft on TLS")
	})
	t.Run("PlainHTTPIsRefused", func(t *testing.T) {
		status, err := post(http.DefaultClient, "http://"+c.nodes[0].Addr()+api.BasePath+"/workflows/noop_chain/start", `{}`)
		require.True(t, err != nil || status == http.StatusBadRequest, "status %d, err %v", status, err)
	})
	t.Run("AnotherCAIsRefused", func(t *testing.T) {
		other := httpsClient(t, tlstest.NewCA(t, "other").File)
		_, err := post(other, "https://"+c.nodes[0].Addr()+api.BasePath+"/workflows", `{}`)
		var unknown x509.UnknownAuthorityError
		require.ErrorAs(t, err, &unknown)
	})
	t.Run("RefusedAtEachHop", func(t *testing.T) { testRefusedAtEachHop(t, c, ca) })
	t.Run("CertificateReplacedAndReloaded", func(t *testing.T) { testCertificateReload(t, c, ca, files["n1"]) })
}

// httpsClient trusts the CA in caFile.
func httpsClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}
