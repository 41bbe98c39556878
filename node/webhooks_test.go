package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/webhooktest"
	"github.com/harvestd/harvest/webhook"
)

// TestClusterWebhooks: a receiver created through one node reaches every
// node's raft catalog; deliveries to any node start one run per event,
// a redelivery to another node is deduplicated, and a delete reaches
// every node.
func TestClusterWebhooks(t *testing.T) {
	c, admin := newAuthCluster(t, 3, 2)
	const secret = "whsec_cluster_test"
	created := authed(t, c.nodes[1], admin, "POST", "/admin/webhooks",
		map[string]any{"name": "pay", "provider": "stripe", "secret": secret, "action": "start", "workflow": "noop_chain"})
	require.Equal(t, http.StatusCreated, created.Status, "%v", created.Body)
	require.Equal(t, "[redacted]", created.Body["secret"])

	deliver := func(n *Node, event string) reply {
		payload := json.RawMessage(fmt.Sprintf(`{"id":%q,"activities":0}`, event))
		sig := webhooktest.StripeSignature(t, time.Now(), string(payload), secret)
		return call(t, n, "POST", "/webhooks/pay", payload, "Stripe-Signature", sig)
	}
	first := map[string]any{}
	for i, n := range c.nodes {
		event := fmt.Sprintf("evt_%d", i)
		eventually(t, "the receiver on "+n.NodeID(), 10*time.Second, func() bool {
			return deliver(n, event).Status != http.StatusNotFound
		})
		// The delivery that found the receiver may have started the run.
		r := deliver(n, event)
		require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		require.Equal(t, true, r.Body["deduplicated"])
		first[event] = r.Body["execution_id"]
	}
	for i := range c.nodes {
		event := fmt.Sprintf("evt_%d", i)
		other := c.nodes[(i+1)%len(c.nodes)]
		r := deliver(other, event)
		require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		require.Equal(t, first[event], r.Body["execution_id"], "a redelivery to another node: the same run")
		require.Equal(t, 1, count(c.eventTypes(t, r.Body["execution_id"]), "WorkflowStarted"))
	}
	list := authed(t, c.nodes[2], admin, "GET", "/admin/webhooks", nil)
	require.Equal(t, http.StatusOK, list.Status)
	require.NotContains(t, fmt.Sprint(list.Body), secret)

	del := authed(t, c.nodes[2], admin, "DELETE", "/admin/webhooks/pay", nil)
	require.Equal(t, http.StatusOK, del.Status, "%v", del.Body)
	for _, n := range c.nodes {
		eventually(t, "the delete on "+n.NodeID(), 10*time.Second, func() bool {
			return deliver(n, "evt_late").Status == http.StatusNotFound
		})
	}
}

func count(list []string, want string) int {
	n := 0
	for _, s := range list {
		if s == want {
			n++
		}
	}
	return n
}

// A receiver missing from a catalog not known to be current (a restarted
// node replaying its log) is a 503 to retry, not a final 404; a current
// catalog's missing receiver is unknown, and a receiver a catalog holds
// is served however current it is.
func TestLookupWebhookOnALaggingCatalog(t *testing.T) {
	cat := admin.Catalog{Webhooks: map[string]webhook.Config{"pay": {Name: "pay"}}}
	for _, current := range []bool{true, false} {
		w, ok, err := lookupWebhook(cat, "pay", func() bool { return current })
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "pay", w.Name)
	}
	_, ok, err := lookupWebhook(cat, "other", func() bool { return true })
	require.NoError(t, err)
	require.False(t, ok)
	_, _, err = lookupWebhook(cat, "other", func() bool { return false })
	require.ErrorIs(t, err, engine.ErrNotRunning)
}

// lockedBuffer is a log sink safe for the node's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

// TestRefusedDeliveryLogsTheRefusingNode: the audit line of a refused
// webhook delivery (which no node forwarded) names the node that refused
// it in node_id, once, never an empty one.
func TestRefusedDeliveryLogsTheRefusingNode(t *testing.T) {
	b := setup(t)
	logs := &lockedBuffer{}
	cfg := b.cfg
	cfg.NodeID = "refuser-1"
	cfg.Logger = zerolog.New(logs)
	n := b.start(t, cfg)
	created := call(t, n, "POST", "/admin/webhooks",
		map[string]any{"name": "pay", "provider": "stripe", "secret": "whsec_node_test", "action": "start", "workflow": "noop_chain"})
	require.Equal(t, http.StatusCreated, created.Status, "%v", created.Body)

	payload := json.RawMessage(`{"id":"evt_forged","activities":0}`)
	sig := webhooktest.StripeSignature(t, time.Now(), string(payload), "whsec_wrong")
	r := call(t, n, "POST", "/webhooks/pay", payload, "Stripe-Signature", sig)
	require.Equal(t, http.StatusUnauthorized, r.Status, "%v", r.Body)

	var raw []byte
	sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"message":"request refused"`)) {
			raw = sc.Bytes()
		}
	}
	require.NotNil(t, raw, "no refusal line in:\n%s", logs.Bytes())
	var line map[string]any
	require.NoError(t, json.Unmarshal(raw, &line))
	require.Equal(t, "refuser-1", line["node_id"], "%s", raw)
	require.Equal(t, 1, bytes.Count(raw, []byte(`"node_id"`)), "one node_id field: %s", raw)
	require.NotContains(t, line, "from_node_id", "no node forwarded it")
	require.NotContains(t, string(logs.Bytes()), "whsec_node_test")
}
