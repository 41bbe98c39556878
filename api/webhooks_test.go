package api

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/webhookstore"
	"github.com/harvestd/harvest/internal/webhooktest"
)

// Secrets of the webhook tests: none may reach a log line or an answer.
const (
	stripeSecret  = "whsec_stripe_test_secret_4242"
	githubSecret  = "gh_test_secret_ab12"
	genericSecret = "generic_test_secret_zz"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

type hookBundle struct {
	*authBundle
	logs *syncBuffer
}

// setupHooks is a server with tokens on, webhooks kept in the test
// database, and its log captured; the receivers stripe (start "block"),
// gh (signal-with-start "block" by /repo/id) and generic exist.
func setupHooks(t *testing.T) *hookBundle {
	t.Helper()
	tb := setup(t)
	store, err := webhookstore.Load(context.Background(), tb.pool)
	require.NoError(t, err)
	logs := &syncBuffer{}
	b := &hookBundle{logs: logs, authBundle: setupAuthOn(t, tb, func(cfg *Config, _ *auth.Table) {
		cfg.Webhooks = store
		cfg.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	})}
	for _, hook := range []map[string]any{
		{"name": "stripe", "provider": "stripe", "secret": stripeSecret, "action": "start", "workflow": "block"},
		{"name": "gh", "provider": "github", "secret": githubSecret, "action": "signal_with_start", "workflow": "block",
			"signal": "push", "workflow_id_pointer": "/repo/id"},
		{"name": "generic", "provider": "generic", "secret": genericSecret, "action": "start", "workflow": "block",
			"signature_header": "X-Signature", "key_pointer": "/delivery", "workflow_id_pointer": "/order"},
	} {
		res := b.as(t, "admin", http.MethodPost, "/admin/webhooks", hook)
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	}
	t.Cleanup(func() {
		for _, s := range []string{stripeSecret, githubSecret, genericSecret} {
			require.NotContains(t, logs.String(), s, "a webhook secret reached the log")
		}
	})
	return b
}

// deliver posts a delivery to a receiver, with no bearer token.
func (b *hookBundle) deliver(t *testing.T, name, payload string, headers ...string) response {
	t.Helper()
	return b.do(t, http.MethodPost, "/webhooks/"+name, payload, headers...)
}

func (b *hookBundle) countRows(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

func TestWebhookAdmin(t *testing.T) {
	b := setupHooks(t)
	t.Run("ListRedactsSecrets", func(t *testing.T) {
		res := b.as(t, "admin", http.MethodGet, "/admin/webhooks", nil)
		require.Equal(t, http.StatusOK, res.Status)
		hooks := res.Body["webhooks"].([]any)
		require.Len(t, hooks, 3)
		for _, h := range hooks {
			require.Equal(t, "[redacted]", h.(map[string]any)["secret"])
		}
		require.Equal(t, "5m0s", hooks[2].(map[string]any)["tolerance"], "stripe's default tolerance")
		require.Equal(t, "/api/harvest/webhooks/stripe", hooks[2].(map[string]any)["path"])
		for _, s := range []string{stripeSecret, githubSecret, genericSecret} {
			require.NotContains(t, string(res.Raw), s)
		}
	})
	t.Run("CreateAgainChangesNothing", func(t *testing.T) {
		res := b.as(t, "admin", http.MethodPost, "/admin/webhooks",
			map[string]any{"name": "stripe", "provider": "stripe", "secret": stripeSecret, "action": "start", "workflow": "block"})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		require.Equal(t, "[redacted]", res.Body["secret"])
	})
	t.Run("OtherConfigUnderTheNameIsConflict", func(t *testing.T) {
		res := b.as(t, "admin", http.MethodPost, "/admin/webhooks",
			map[string]any{"name": "stripe", "provider": "stripe", "secret": "whsec_other", "action": "start", "workflow": "block"})
		requireError(t, res, http.StatusConflict, codeConflict)
	})
	for _, tc := range []struct {
		name string
		body any
		code string
	}{
		{"UnknownProvider", map[string]any{"name": "x", "provider": "paypal", "secret": "s", "action": "start", "workflow": "w"}, codeInvalidArgument},
		{"NoSecret", map[string]any{"name": "x", "provider": "stripe", "action": "start", "workflow": "w"}, codeInvalidArgument},
		{"SignalWithoutPointer", map[string]any{"name": "x", "provider": "github", "secret": "s", "action": "signal_with_start", "workflow": "w", "signal": "go"}, codeInvalidArgument},
		{"BadTolerance", map[string]any{"name": "x", "provider": "stripe", "secret": "s", "action": "start", "workflow": "w", "tolerance": "soon"}, codeInvalidArgument},
		{"UnknownField", map[string]any{"name": "x", "secrets": "s"}, codeInvalidJSON},
		{"NotJSON", "{", codeInvalidJSON},
	} {
		t.Run("Refuses"+tc.name, func(t *testing.T) {
			requireError(t, b.as(t, "admin", http.MethodPost, "/admin/webhooks", tc.body), http.StatusBadRequest, tc.code)
		})
	}
	t.Run("Delete", func(t *testing.T) {
		res := b.as(t, "admin", http.MethodDelete, "/admin/webhooks/generic", nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		requireError(t, b.as(t, "admin", http.MethodDelete, "/admin/webhooks/generic", nil), http.StatusNotFound, codeNotFound)
		requireError(t, b.deliver(t, "generic", `{}`), http.StatusNotFound, codeNotFound)
	})
	t.Run("NeedsAdmin", func(t *testing.T) {
		requireError(t, b.as(t, "write", http.MethodGet, "/admin/webhooks", nil), http.StatusForbidden, codeForbidden)
	})
}

func TestStripeWebhook(t *testing.T) {
	b := setupHooks(t)
	const event = `{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount":100}}}`
	sig := func(at time.Time, payload string, secrets ...string) []string {
		return []string{"Stripe-Signature", webhooktest.StripeSignature(t, at, payload, secrets...)}
	}
	runs := func() int {
		return b.countRows(t, `SELECT count(*) FROM harvest_executions WHERE workflow_name = 'block'`)
	}

	first := b.deliver(t, "stripe", event, sig(time.Now(), event, stripeSecret)...)
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	require.Equal(t, false, first.Body["deduplicated"])
	require.Equal(t, "hv:webhook:stripe:evt_1", first.Body["idempotency_key"])
	require.Equal(t, "evt_1", first.Body["delivery_id"])
	require.Equal(t, 1, runs())
	var input string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT input::text FROM harvest_executions WHERE execution_id = $1`, mustUUID(t, first.Body["execution_id"].(string))).Scan(&input))
	require.JSONEq(t, event, input, "the payload is the run's input")

	for _, tc := range []struct {
		name    string
		payload string
		headers []string
		status  int
	}{
		{"RedeliveryIsDeduplicated", event, sig(time.Now().Add(time.Minute), event, stripeSecret), http.StatusOK},
		{"TwoV1SignaturesOneMatches", event, sig(time.Now(), event, "whsec_rolled_off", stripeSecret), http.StatusOK},
		{"Tampered", strings.Replace(event, "100", "999", 1), sig(time.Now(), event, stripeSecret), http.StatusUnauthorized},
		{"OutsideTheTolerance", event, sig(time.Now().Add(-6*time.Minute), event, stripeSecret), http.StatusUnauthorized},
		{"WrongSecret", event, sig(time.Now(), event, "whsec_wrong"), http.StatusUnauthorized},
		{"NoSignature", event, nil, http.StatusUnauthorized},
		{"BearerTokenIsNoSignature", event, []string{"Authorization", b.tokens["admin"]}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.counts(t)
			res := b.deliver(t, "stripe", tc.payload, tc.headers...)
			if tc.status == http.StatusUnauthorized {
				requireError(t, res, http.StatusUnauthorized, codeUnauthenticated)
				require.Equal(t, before, b.counts(t), "a refused delivery stores nothing")
				return
			}
			require.Equal(t, tc.status, res.Status, "%s", res.Raw)
			require.Equal(t, true, res.Body["deduplicated"])
			require.Equal(t, first.Body["execution_id"], res.Body["execution_id"])
			require.Equal(t, before, b.counts(t), "a redelivery appends nothing")
		})
	}
	t.Run("ANewEventStartsAnotherRun", func(t *testing.T) {
		ev := `{"id":"evt_2","type":"invoice.paid"}`
		res := b.deliver(t, "stripe", ev, sig(time.Now(), ev, "whsec_next", stripeSecret)...)
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		require.Equal(t, 2, runs())
	})
	t.Run("SignedButNoEventID", func(t *testing.T) {
		ev := `{"type":"invoice.paid"}`
		requireError(t, b.deliver(t, "stripe", ev, sig(time.Now(), ev, stripeSecret)...), http.StatusBadRequest, codeInvalidArgument)
	})
	t.Run("BodyOverTheCap", func(t *testing.T) {
		big := `{"id":"evt_big","pad":"` + strings.Repeat("x", 70<<10) + `"}`
		requireError(t, b.deliver(t, "stripe", big, sig(time.Now(), big, stripeSecret)...), http.StatusRequestEntityTooLarge, codeTooLarge)
	})
	t.Run("UnknownReceiver", func(t *testing.T) {
		requireError(t, b.deliver(t, "nope", event, sig(time.Now(), event, stripeSecret)...), http.StatusNotFound, codeNotFound)
	})
	t.Run("ClientsCannotUseTheReservedKey", func(t *testing.T) {
		res := b.as(t, "write", http.MethodPost, "/workflows/block/start", map[string]any{}, "Idempotency-Key", "hv:webhook:stripe:evt_9")
		requireError(t, res, http.StatusBadRequest, codeInvalidArgument)
	})
}

func TestGitHubWebhook(t *testing.T) {
	b := setupHooks(t)
	const push = `{"ref":"refs/heads/main","repo":{"id":"harvest"}}`
	headers := func(delivery, payload, secret string) []string {
		return []string{"X-GitHub-Delivery", delivery, "X-Hub-Signature-256", webhooktest.GitHubSignature(t, secret, payload)}
	}
	signals := func() int {
		return b.countRows(t, `SELECT count(*) FROM harvest_signals s JOIN harvest_executions e USING (execution_id)
			WHERE e.workflow_name = 'block' AND e.workflow_id = 'harvest'`)
	}

	first := b.deliver(t, "gh", push, headers("d-1", push, githubSecret)...)
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	require.Equal(t, "harvest", first.Body["workflow_id"])
	require.Equal(t, "hv:webhook:gh:sha256:"+webhooktest.OpenSSLSHA256(t, push), first.Body["idempotency_key"])
	require.Equal(t, "d-1", first.Body["delivery_id"])
	require.Equal(t, 1, signals())

	t.Run("RedeliveryIsOneSignal", func(t *testing.T) {
		res := b.deliver(t, "gh", push, headers("d-1", push, githubSecret)...)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, true, res.Body["deduplicated"])
		require.Equal(t, first.Body["execution_id"], res.Body["execution_id"])
		require.Equal(t, 1, signals())
	})
	t.Run("MadeUpDeliveryIDsAreOneDelivery", func(t *testing.T) {
		// GitHub signs the body, not X-GitHub-Delivery: a captured body
		// posted again under made-up delivery ids is the same delivery.
		before := b.counts(t)
		for _, id := range []string{"forged-1", "forged-2", "forged-3", "forged-4", "forged-5"} {
			res := b.deliver(t, "gh", push, headers(id, push, githubSecret)...)
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
			require.Equal(t, true, res.Body["deduplicated"])
			require.Equal(t, first.Body["idempotency_key"], res.Body["idempotency_key"])
			require.Equal(t, id, res.Body["delivery_id"], "the header is reported, not keyed on")
		}
		require.Equal(t, before, b.counts(t), "nothing appended")
		require.Equal(t, 1, signals())
	})
	t.Run("ANewDeliverySignalsTheSameRun", func(t *testing.T) {
		next := `{"ref":"refs/heads/main","after":"c0ffee","repo":{"id":"harvest"}}`
		res := b.deliver(t, "gh", next, headers("d-2", next, githubSecret)...)
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		require.Equal(t, first.Body["execution_id"], res.Body["execution_id"])
		require.Equal(t, "hv:webhook:gh:sha256:"+webhooktest.OpenSSLSHA256(t, next), res.Body["idempotency_key"])
		require.Equal(t, 2, signals())
	})
	t.Run("Tampered", func(t *testing.T) {
		before := b.counts(t)
		res := b.deliver(t, "gh", strings.Replace(push, "main", "evil", 1), headers("d-3", push, githubSecret)...)
		requireError(t, res, http.StatusUnauthorized, codeUnauthenticated)
		require.Equal(t, before, b.counts(t))
	})
	t.Run("DocumentedVectorVerifiesThenNeedsJSON", func(t *testing.T) {
		// GitHub's documented test values: the signature passes (not 401),
		// and "Hello, World!" is no JSON payload to start a run with.
		require.NoError(t, b.server.cfg.Webhooks.DeleteWebhook(context.Background(), "gh"))
		res := b.as(t, "admin", http.MethodPost, "/admin/webhooks", map[string]any{"name": "gh", "provider": "github",
			"secret": "It's a Secret to Everybody", "action": "start", "workflow": "block"})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		res = b.deliver(t, "gh", "Hello, World!", "X-GitHub-Delivery", "d-vector",
			"X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
		requireError(t, res, http.StatusBadRequest, codeInvalidJSON)
		res = b.deliver(t, "gh", "Hello, World?", "X-GitHub-Delivery", "d-vector",
			"X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
		requireError(t, res, http.StatusUnauthorized, codeUnauthenticated)
	})
}

func TestGenericWebhook(t *testing.T) {
	b := setupHooks(t)
	const order = `{"delivery":"dl-7","order":"order-7","total":12}`
	sig := webhooktest.OpenSSLHMAC(t, genericSecret, order)
	first := b.deliver(t, "generic", order, "X-Signature", sig)
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	require.Equal(t, "order-7", first.Body["workflow_id"], "the workflow id from its pointer")
	again := b.deliver(t, "generic", order, "X-Signature", "sha256="+sig)
	require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
	require.Equal(t, true, again.Body["deduplicated"])
	requireError(t, b.deliver(t, "generic", order, "X-Signature", webhooktest.OpenSSLHMAC(t, "wrong", order)),
		http.StatusUnauthorized, codeUnauthenticated)
}
