package api

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// ahead is how far the server's clock runs ahead of time.Now.
	ahead *atomic.Int64
}

// advance moves the server's clock d ahead (from now on), until the
// test ends.
func (b *hookBundle) advance(t *testing.T, d time.Duration) {
	b.ahead.Add(int64(d))
	t.Cleanup(func() { b.ahead.Add(-int64(d)) })
}

// setupHooks is a server with tokens on, webhooks kept in the test
// database, and its log captured; the receivers stripe (start "block"),
// gh (signal-with-start "block" by /repo/id) and generic (its
// signatures cover a Webhook-Timestamp, the default) exist.
func setupHooks(t *testing.T) *hookBundle {
	t.Helper()
	tb := setup(t)
	store, err := webhookstore.Load(context.Background(), tb.pool)
	require.NoError(t, err)
	return setupHooksOn(t, tb, store)
}

// setupHooksOn is setupHooks on a store of the caller's.
func setupHooksOn(t *testing.T, tb *testBundle, store *webhookstore.Store) *hookBundle {
	t.Helper()
	logs := &syncBuffer{}
	b := &hookBundle{logs: logs, ahead: &atomic.Int64{}, authBundle: setupAuthOn(t, tb, func(cfg *Config, _ *auth.Table) {
		cfg.Webhooks = store
		cfg.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	})}
	b.server.now = func() time.Time { return time.Now().Add(time.Duration(b.ahead.Load())) }
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
		require.Equal(t, "Webhook-Timestamp", hooks[0].(map[string]any)["timestamp_header"], "a new generic receiver signs a timestamp")
		require.Equal(t, "5m0s", hooks[0].(map[string]any)["tolerance"], "its tolerance")
		require.NotContains(t, hooks[1], "timestamp_header", "github signs none")
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
		{"NoTimestampWithTimestampHeader", map[string]any{"name": "x", "provider": "generic", "secret": "s", "action": "start", "workflow": "w",
			"signature_header": "X-Sig", "key_pointer": "/id", "no_timestamp": true, "timestamp_header": "X-Sent-At"}, codeInvalidArgument},
		{"NoTimestampOnStripe", map[string]any{"name": "x", "provider": "stripe", "secret": "s", "action": "start", "workflow": "w", "no_timestamp": true}, codeInvalidArgument},
		{"TimestampHeaderOnGitHub", map[string]any{"name": "x", "provider": "github", "secret": "s", "action": "start", "workflow": "w", "timestamp_header": "T"}, codeInvalidArgument},
		{"TimestampHeaderIsTheSignatureHeader", map[string]any{"name": "x", "provider": "generic", "secret": "s", "action": "start", "workflow": "w",
			"signature_header": "X-Sig", "key_pointer": "/id", "timestamp_header": "x-sig"}, codeInvalidArgument},
		{"TimestampHeaderWithNUL", map[string]any{"name": "x", "provider": "generic", "secret": "s", "action": "start", "workflow": "w",
			"signature_header": "X-Sig", "key_pointer": "/id", "timestamp_header": "T\u0000"}, codeInvalidJSON},
		{"ToleranceWithoutTimestamp", map[string]any{"name": "x", "provider": "generic", "secret": "s", "action": "start", "workflow": "w",
			"signature_header": "X-Sig", "key_pointer": "/id", "no_timestamp": true, "tolerance": "1m"}, codeInvalidArgument},
		{"NoTimestampNotABool", map[string]any{"name": "x", "provider": "generic", "secret": "s", "action": "start", "workflow": "w",
			"signature_header": "X-Sig", "key_pointer": "/id", "no_timestamp": "yes"}, codeInvalidJSON},
		{"UnknownField", map[string]any{"name": "x", "secrets": "s"}, codeInvalidJSON},
		{"NotJSON", "{", codeInvalidJSON},
	} {
		t.Run("Refuses"+tc.name, func(t *testing.T) {
			requireError(t, b.as(t, "admin", http.MethodPost, "/admin/webhooks", tc.body), http.StatusBadRequest, tc.code)
		})
	}
	t.Run("OptOutSignsTheBodyOnly", func(t *testing.T) {
		res := b.as(t, "admin", http.MethodPost, "/admin/webhooks", map[string]any{"name": "plain", "provider": "generic",
			"secret": genericSecret, "action": "start", "workflow": "block", "signature_header": "X-Signature", "key_pointer": "/delivery",
			"no_timestamp": true})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		require.NotContains(t, res.Body, "timestamp_header")
		require.NotContains(t, res.Body, "tolerance")
		const ev = `{"delivery":"plain-1"}`
		ok := b.deliver(t, "plain", ev, "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, ev))
		require.Equal(t, http.StatusCreated, ok.Status, "%s", ok.Raw)
	})
	t.Run("ItsOwnTimestampHeaderAndTolerance", func(t *testing.T) {
		res := b.as(t, "admin", http.MethodPost, "/admin/webhooks", map[string]any{"name": "own", "provider": "generic",
			"secret": genericSecret, "action": "start", "workflow": "block", "signature_header": "X-Signature", "key_pointer": "/delivery",
			"timestamp_header": "X-Sent-At", "tolerance": "1h"})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		require.Equal(t, "X-Sent-At", res.Body["timestamp_header"])
		require.Equal(t, "1h0m0s", res.Body["tolerance"])
		const ev = `{"delivery":"own-1"}`
		ts := strconv.FormatInt(time.Now().Add(-30*time.Minute).Unix(), 10)
		ok := b.deliver(t, "own", ev, "X-Sent-At", ts, "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, ts+"."+ev))
		require.Equal(t, http.StatusCreated, ok.Status, "%s", ok.Raw)
	})
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
	// signed is a delivery's headers signed at at: the signature covers
	// "<unix seconds>.<body>".
	signed := func(at time.Time, payload, secret string) []string {
		ts := strconv.FormatInt(at.Unix(), 10)
		return []string{"Webhook-Timestamp", ts, "X-Signature", webhooktest.OpenSSLHMAC(t, secret, ts+"."+payload)}
	}
	captured := signed(time.Now(), order, genericSecret)
	first := b.deliver(t, "generic", order, captured...)
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	require.Equal(t, "order-7", first.Body["workflow_id"], "the workflow id from its pointer")
	require.Equal(t, "hv:webhook:generic:dl-7", first.Body["idempotency_key"], "the signed id is the key")

	t.Run("RedeliveryIsDeduplicated", func(t *testing.T) {
		h := signed(time.Now().Add(time.Minute), order, genericSecret)
		h[3] = "sha256=" + h[3]
		again := b.deliver(t, "generic", order, h...)
		require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
		require.Equal(t, true, again.Body["deduplicated"])
		require.Equal(t, first.Body["execution_id"], again.Body["execution_id"])
	})
	t.Run("CapturedDeliveryReplayedAfterTheWindowIsRefused", func(t *testing.T) {
		// Past the idempotency window (24 h by default) a replay would
		// start a new run; its signed timestamp is long out of tolerance.
		b.advance(t, 25*time.Hour)
		before := b.counts(t)
		requireError(t, b.deliver(t, "generic", order, captured...), http.StatusUnauthorized, codeUnauthenticated)
		require.Equal(t, before, b.counts(t), "a refused delivery stores nothing")
	})
	tampered := signed(time.Now().Add(-time.Hour), order, genericSecret)
	tampered[1] = strconv.FormatInt(time.Now().Unix(), 10)
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"OutsideTheTolerance", signed(time.Now().Add(-6*time.Minute), order, genericSecret)},
		{"FromTheFuture", signed(time.Now().Add(time.Hour), order, genericSecret)},
		{"TimestampChangedAfterSigning", tampered},
		{"WrongSecret", signed(time.Now(), order, "wrong")},
		{"BodyOnlySignature", []string{"X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, order)}},
		{"BodyOnlySignatureWithATimestamp", []string{"Webhook-Timestamp", captured[1], "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, order)}},
		{"TimestampNotANumber", []string{"Webhook-Timestamp", "soon", "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, "soon."+order)}},
		{"TimestampNegative", []string{"Webhook-Timestamp", "-1", "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, "-1."+order)}},
		{"TimestampHuge", []string{"Webhook-Timestamp", strings.Repeat("9", 40), "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, strings.Repeat("9", 40)+"."+order)}},
		{"TimestampFarFuture", []string{"Webhook-Timestamp", "999999999999", "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, "999999999999."+order)}},
		{"NoSignature", []string{"Webhook-Timestamp", captured[1]}},
	} {
		t.Run("Refuses"+tc.name, func(t *testing.T) {
			before := b.counts(t)
			requireError(t, b.deliver(t, "generic", order, tc.headers...), http.StatusUnauthorized, codeUnauthenticated)
			require.Equal(t, before, b.counts(t), "a refused delivery stores nothing")
		})
	}
	t.Run("TimestampWithNULIsA4xx", func(t *testing.T) {
		// No Go client sends a NUL in a header: write the request by hand.
		before := b.counts(t)
		status := rawPost(t, b.url+"/webhooks/generic", order, "Webhook-Timestamp: "+captured[1]+"\x00", "X-Signature: "+captured[3])
		require.GreaterOrEqual(t, status, 400)
		require.Less(t, status, 500)
		require.Equal(t, before, b.counts(t))
	})
}

// rawPost writes a POST of body to url over a new connection, headers
// as given (unchecked), and returns the answer's status.
func rawPost(t *testing.T, rawURL, body string, headers ...string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	req := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n" + body
	_, err = conn.Write([]byte(req))
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	return res.StatusCode
}

// TestWebhookStoredBeforeTimestamps: a generic receiver stored before
// receivers signed timestamps (its config has no timestamp_header) keeps
// verifying body-only signatures; creating it again with no_timestamp
// changes nothing, and without it is another config (409).
func TestWebhookStoredBeforeTimestamps(t *testing.T) {
	tb := setup(t)
	const old = `{"name":"legacy","provider":"generic","secret":"` + genericSecret + `","action":"start","workflow":"block",
		"key_pointer":"/delivery","signature_header":"X-Signature","created_at":"2026-01-02T03:04:05Z"}`
	_, err := tb.pool.Exec(context.Background(),
		`INSERT INTO harvest_webhooks (name, config, created_at) VALUES ('legacy', $1, '2026-01-02T03:04:05Z')`, old)
	require.NoError(t, err)
	store, err := webhookstore.Load(context.Background(), tb.pool)
	require.NoError(t, err)
	b := setupHooksOn(t, tb, store)

	const ev = `{"delivery":"legacy-1"}`
	res := b.deliver(t, "legacy", ev, "X-Signature", webhooktest.OpenSSLHMAC(t, genericSecret, ev))
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	list := b.as(t, "admin", http.MethodGet, "/admin/webhooks", nil)
	require.Equal(t, http.StatusOK, list.Status)
	var legacy map[string]any
	for _, h := range list.Body["webhooks"].([]any) {
		if h.(map[string]any)["name"] == "legacy" {
			legacy = h.(map[string]any)
		}
	}
	require.NotNil(t, legacy, "%s", list.Raw)
	require.NotContains(t, legacy, "timestamp_header")
	require.NotContains(t, legacy, "tolerance")

	body := map[string]any{"name": "legacy", "provider": "generic", "secret": genericSecret, "action": "start", "workflow": "block",
		"key_pointer": "/delivery", "signature_header": "X-Signature"}
	requireError(t, b.as(t, "admin", http.MethodPost, "/admin/webhooks", body), http.StatusConflict, codeConflict)
	body["no_timestamp"] = true
	again := b.as(t, "admin", http.MethodPost, "/admin/webhooks", body)
	require.Equal(t, http.StatusCreated, again.Status, "%s", again.Raw)
}
