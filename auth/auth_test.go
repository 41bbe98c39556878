package auth

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScope(t *testing.T) {
	cases := []struct {
		have, need Scope
		want       bool
	}{
		{ScopeRead, ScopeRead, true},
		{ScopeRead, ScopeWrite, false},
		{ScopeWrite, ScopeRead, true},
		{ScopeWrite, ScopeAdmin, false},
		{ScopeAdmin, ScopeWrite, true},
		{ScopeNone, ScopeRead, false},
		{ScopeAdmin, ScopeNone, false},
	}
	for _, tc := range cases {
		t.Run(tc.have.String()+"_"+tc.need.String(), func(t *testing.T) {
			require.Equal(t, tc.want, tc.have.Allows(tc.need))
		})
	}
	t.Run("JSON", func(t *testing.T) {
		b, err := json.Marshal(ScopeWrite)
		require.NoError(t, err)
		require.JSONEq(t, `"write"`, string(b))
		var s Scope
		require.NoError(t, json.Unmarshal([]byte(`"admin"`), &s))
		require.Equal(t, ScopeAdmin, s)
		require.ErrorIs(t, json.Unmarshal([]byte(`"root"`), &s), ErrUnknownScope)
		require.NoError(t, json.Unmarshal([]byte(`"none"`), &s))
		require.Equal(t, ScopeNone, s)
		_, err = ParseScope("none")
		require.ErrorIs(t, err, ErrUnknownScope)
	})
}

func TestParse(t *testing.T) {
	full, tok := New(Spec{Name: "ci", Scope: ScopeRead}, time.Now())
	cases := []struct {
		name  string
		token string
		ok    bool
	}{
		{"Minted", full, true},
		{"Empty", "", false},
		{"NoPrefix", strings.TrimPrefix(full, Prefix), false},
		{"Truncated", full[:len(full)-1], false},
		{"Upper", strings.ToUpper(full), false},
		{"NoSeparator", strings.Replace(full, "_", "x", 2), false},
		{"NotHex", full[:len(full)-1] + "z", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := Parse(tc.token)
			if !tc.ok {
				require.ErrorIs(t, err, ErrMalformed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tok.ID, id)
		})
	}
}

func TestVerify(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) (*Verifier, map[string]string) {
		t.Helper()
		table := NewTable(nil)
		tokens := map[string]string{}
		mint := func(name string, spec Spec) Token {
			full, tok := New(spec, now.Add(-time.Hour))
			tokens[name] = full
			table.Put(tok)
			return tok
		}
		mint("read", Spec{Scope: ScopeRead})
		mint("admin", Spec{Scope: ScopeAdmin, ExpiresAt: now.Add(time.Minute)})
		mint("expired", Spec{Scope: ScopeAdmin, ExpiresAt: now})
		revoked := mint("revoked", Spec{Scope: ScopeAdmin})
		at := now.Add(-time.Minute)
		revoked.RevokedAt = &at
		table.Put(revoked)
		_, forged := New(Spec{Scope: ScopeAdmin}, now)
		tokens["wrong_secret"] = Prefix + forged.ID + "_" + strings.Repeat("0", secretDigits)
		v := NewVerifier(table)
		v.now = func() time.Time { return now }
		return v, tokens
	}
	v, tokens := setup(t)
	cases := []struct {
		name   string
		header string
		scope  Scope
		err    error
	}{
		{"Read", "Bearer " + tokens["read"], ScopeRead, nil},
		{"SchemeCaseInsensitive", "bearer " + tokens["admin"], ScopeAdmin, nil},
		{"Missing", "", ScopeNone, ErrMissing},
		{"Basic", "Basic dXNlcjpwYXNz", ScopeNone, ErrMissing},
		{"Malformed", "Bearer hvt_nope", ScopeNone, ErrMalformed},
		{"UnknownID", "Bearer " + tokens["wrong_secret"], ScopeNone, ErrUnknown},
		{"WrongSecret", "Bearer " + tokens["read"][:len(tokens["read"])-4] + "0000", ScopeNone, ErrUnknown},
		{"Revoked", "Bearer " + tokens["revoked"], ScopeNone, ErrUnknown},
		{"Expired", "Bearer " + tokens["expired"], ScopeNone, ErrExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := v.Verify(tc.header)
			if tc.err != nil {
				require.ErrorIs(t, err, ErrUnauthenticated)
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.scope, id.Scope)
			require.NotEmpty(t, id.TokenID)
		})
	}
}

func TestNeverStoresTheSecret(t *testing.T) {
	full, tok := New(Spec{Scope: ScopeRead}, time.Now())
	b, err := json.Marshal(tok)
	require.NoError(t, err)
	require.NotContains(t, string(b), full[len(Prefix)+idDigits+1:])
	require.Equal(t, Hash(full), tok.Hash)
}
