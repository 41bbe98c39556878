package client_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/engine"
)

// tableTokens is a token admin over an in-memory auth.Table: the node's
// backends keep the table in the raft catalog or the shard database, but
// these tests are about the client.
type tableTokens struct {
	mu    sync.Mutex // serializes revocations (read, change, put)
	table *auth.Table
}

var _ api.TokenAdmin = (*tableTokens)(nil)

func (tt *tableTokens) CreateToken(_ context.Context, spec auth.Spec) (string, auth.Token, error) {
	full, t := auth.New(spec, time.Now())
	tt.table.Put(t)
	return full, t, nil
}

func (tt *tableTokens) Tokens(context.Context) ([]auth.Token, error) { return tt.table.List(), nil }

func (tt *tableTokens) RevokeToken(_ context.Context, id string) (auth.Token, error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t, ok, _ := tt.table.Token(id)
	if !ok {
		return auth.Token{}, fmt.Errorf("%w: %s", api.ErrUnknownToken, id)
	}
	if t.RevokedAt == nil {
		at := time.Now().UTC()
		t.RevokedAt = &at
		tt.table.Put(t)
	}
	return t, nil
}

// authBundle is a real node with bearer tokens on: engine and API on
// their own database, and an admin token. Its api client sends no token.
type authBundle struct {
	*serverBundle
	admin *client.Client // sends the admin token
}

// as is a client of the node sending token.
func (b *authBundle) as(token string) *client.Client {
	return client.New(b.url, client.WithToken(token), client.WithoutRetries())
}

func setupAuthServer(t *testing.T) *authBundle {
	t.Helper()
	table := auth.NewTable(nil)
	full, tok := auth.New(auth.Spec{Name: "initial", Scope: auth.ScopeAdmin}, time.Now())
	table.Put(tok)
	b := &authBundle{serverBundle: setupServerWith(t, func(e *engine.Engine) api.Config {
		return api.Config{Gates: e, Verifier: auth.NewVerifier(table), Tokens: &tableTokens{table: table}}
	})}
	b.admin = b.as(full)
	return b
}

// findToken is the token id of list.
func findToken(t *testing.T, list []client.Token, id string) client.Token {
	t.Helper()
	for _, tok := range list {
		if tok.ID == id {
			return tok
		}
	}
	t.Fatalf("token %s is not listed", id)
	return client.Token{}
}

func TestTokens(t *testing.T) {
	t.Parallel()

	t.Run("CreateListUseRevoke", func(t *testing.T) {
		t.Parallel()
		b := setupAuthServer(t)
		before := time.Now()
		created, err := b.admin.CreateToken(ctxT(t), client.CreateTokenRequest{Scope: client.ScopeRead, Name: "ci", ExpiresIn: 90 * time.Minute})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(created.Secret, "hvt_"+created.ID+"_"), "secret %q of id %s", created.Secret, created.ID)
		require.Equal(t, client.TokenActive, created.State)
		require.Equal(t, client.ScopeRead, created.Scope)
		require.Equal(t, "ci", created.Name)
		require.NotNil(t, created.ExpiresAt)
		require.WithinRange(t, *created.ExpiresAt, before.Add(90*time.Minute-time.Second), time.Now().Add(90*time.Minute+time.Second))
		require.Nil(t, created.RevokedAt)
		require.Contains(t, string(created.Raw), created.Secret)

		list, err := b.admin.Tokens(ctxT(t))
		require.NoError(t, err)
		require.Len(t, list, 2, "the initial token and the new one")
		listed := findToken(t, list, created.ID)
		require.Equal(t, client.TokenActive, listed.State)
		require.Equal(t, client.ScopeRead, listed.Scope)
		require.Empty(t, listed.Secret, "a list never shows the secret")
		require.NotContains(t, string(listed.Raw), created.Secret)

		ci := b.as(created.Secret)
		routing, err := ci.Routing(ctxT(t))
		require.NoError(t, err, "the new read token reads")
		require.Len(t, routing.Shards, 1)

		revoked, err := b.admin.RevokeToken(ctxT(t), created.ID)
		require.NoError(t, err)
		require.Equal(t, client.TokenRevoked, revoked.State)
		require.NotNil(t, revoked.RevokedAt)
		require.Empty(t, revoked.Secret)
		again, err := b.admin.RevokeToken(ctxT(t), created.ID)
		require.NoError(t, err, "revoking again answers the same")
		require.Equal(t, revoked.RevokedAt, again.RevokedAt)

		_, err = ci.Routing(ctxT(t))
		require.ErrorIs(t, err, client.ErrUnauthenticated)
		require.NotErrorIs(t, err, client.ErrForbidden)
		list, err = b.admin.Tokens(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, client.TokenRevoked, findToken(t, list, created.ID).State)
	})

	t.Run("ReadTokenIsForbiddenAdminRoutes", func(t *testing.T) {
		t.Parallel()
		b := setupAuthServer(t)
		created, err := b.admin.CreateToken(ctxT(t), client.CreateTokenRequest{Scope: client.ScopeRead})
		require.NoError(t, err)
		require.Nil(t, created.ExpiresAt, "no ExpiresIn: never expires")
		reader := b.as(created.Secret)

		_, err = reader.Tokens(ctxT(t))
		require.ErrorIs(t, err, client.ErrForbidden)
		require.NotErrorIs(t, err, client.ErrUnauthenticated)
		require.ErrorContains(t, err, "admin")
		_, err = reader.CreateToken(ctxT(t), client.CreateTokenRequest{Scope: client.ScopeAdmin})
		require.ErrorIs(t, err, client.ErrForbidden)
		_, err = reader.RevokeToken(ctxT(t), created.ID)
		require.ErrorIs(t, err, client.ErrForbidden)
	})

	t.Run("MissingOrMalformedTokenIsUnauthenticated", func(t *testing.T) {
		t.Parallel()
		b := setupAuthServer(t)
		for _, token := range []string{"", "hvt_nope", "hvt_0123456789abcdef_" + strings.Repeat("0", 64)} {
			_, err := b.as(token).Members(ctxT(t))
			require.ErrorIs(t, err, client.ErrUnauthenticated, "token %q", token)
		}
	})

	t.Run("UnknownIDIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setupAuthServer(t)
		_, err := b.admin.RevokeToken(ctxT(t), "0123456789abcdef")
		require.ErrorIs(t, err, client.ErrNotFound)
		_, err = b.admin.RevokeToken(ctxT(t), "")
		require.ErrorIs(t, err, client.ErrInvalid)
	})

	t.Run("InvalidRequests", func(t *testing.T) {
		t.Parallel()
		b := setupAuthServer(t)
		_, err := b.admin.CreateToken(ctxT(t), client.CreateTokenRequest{Scope: "root"})
		require.ErrorIs(t, err, client.ErrInvalid)
		_, err = b.admin.CreateToken(ctxT(t), client.CreateTokenRequest{Scope: client.ScopeRead, ExpiresIn: -time.Second})
		require.ErrorIs(t, err, client.ErrInvalid)
		list, err := b.admin.Tokens(ctxT(t))
		require.NoError(t, err)
		require.Len(t, list, 1, "no token was made")
	})

	t.Run("AuthOffHasNoTokens", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		_, err := b.api.Tokens(ctxT(t))
		require.ErrorIs(t, err, client.ErrNotFound)
	})
}

// TestTokenRetries: a lost answer (a proxy's 502, or the 503 of a node
// whose forward to the raft leader failed) may hide a minted token, so a
// creation is sent once; a revocation is safe to resend.
func TestTokenRetries(t *testing.T) {
	t.Parallel()
	fast := client.WithRetryPolicy(client.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	lost := []answer{{status: http.StatusBadGateway, body: "bad gateway"}, unavailable}

	t.Run("CreateIsSentOnce", func(t *testing.T) {
		t.Parallel()
		for _, a := range lost {
			s := script(t, a, answer{status: http.StatusCreated, body: `{"id":"0123456789abcdef","token":"hvt_x"}`})
			_, err := client.New(s.srv.URL, fast).CreateToken(ctxT(t), client.CreateTokenRequest{Scope: client.ScopeRead, Name: "ci",
				ExpiresIn: 24 * time.Hour})
			require.ErrorIs(t, err, client.ErrUnavailable)
			reqs, _ := s.received()
			require.Len(t, reqs, 1, "%d", a.status)
			require.Equal(t, http.MethodPost, reqs[0].method)
			require.Equal(t, "/api/harvest/admin/tokens", reqs[0].path)
			require.JSONEq(t, `{"scope":"read","name":"ci","expires_in":"24h0m0s"}`, string(reqs[0].body))
			require.Empty(t, reqs[0].header.Get("Idempotency-Key"))
		}
	})

	t.Run("CreateIsRetriedWhenNothingWasSent", func(t *testing.T) {
		t.Parallel()
		s := script(t, unavailable)
		s.srv.Close()
		begin := time.Now()
		_, err := client.New(s.srv.URL, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 2, InitialBackoff: 100 * time.Millisecond,
			MaxBackoff: 100 * time.Millisecond})).CreateToken(ctxT(t), client.CreateTokenRequest{Scope: client.ScopeRead})
		require.ErrorContains(t, err, s.srv.URL)
		require.GreaterOrEqual(t, time.Since(begin), 100*time.Millisecond, "one wait: a refused connection sent nothing")
	})

	t.Run("RevokeIsRetried", func(t *testing.T) {
		t.Parallel()
		for _, a := range lost {
			s := script(t, a, answer{status: http.StatusOK, body: `{"id":"0123456789abcdef","state":"revoked"}`})
			tok, err := client.New(s.srv.URL, fast).RevokeToken(ctxT(t), "0123456789abcdef")
			require.NoError(t, err, "%d", a.status)
			require.Equal(t, client.TokenRevoked, tok.State)
			reqs, _ := s.received()
			require.Len(t, reqs, 2)
			require.Equal(t, http.MethodDelete, reqs[1].method)
			require.Equal(t, "/api/harvest/admin/tokens/0123456789abcdef", reqs[1].path)
		}
	})

	t.Run("RefusalsAreNotRetried", func(t *testing.T) {
		t.Parallel()
		for _, a := range []answer{
			{status: http.StatusUnauthorized, body: `{"error":"no bearer token","code":"unauthenticated"}`},
			{status: http.StatusForbidden, body: `{"error":"needs admin","code":"forbidden"}`},
		} {
			s := script(t, a)
			_, err := client.New(s.srv.URL, fast).Tokens(ctxT(t))
			require.Error(t, err)
			reqs, _ := s.received()
			require.Len(t, reqs, 1, "%d", a.status)
		}
	})
}
