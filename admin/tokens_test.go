package admin

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

func TestTokenCommands(t *testing.T) {
	setup := func(t *testing.T) (*fsm, *fsmBundle, auth.Token) {
		t.Helper()
		f, b := testFSM(t)
		_, tok := auth.New(auth.Spec{Name: "ci", Scope: auth.ScopeWrite}, at(0))
		b.mustApply(t, f, PutToken{Token: tok, At: at(0)})
		return f, b, tok
	}
	t.Run("PutIsPublished", func(t *testing.T) {
		f, _, tok := setup(t)
		require.Equal(t, tok, f.catalog().Tokens[tok.ID])
	})
	t.Run("PutAgainChangesNothing", func(t *testing.T) {
		f, b, tok := setup(t)
		require.NoError(t, b.apply(t, f, PutToken{Token: tok, At: at(1)}))
		require.Len(t, f.catalog().Tokens, 1)
	})
	t.Run("SameIDOtherSecretIsRefused", func(t *testing.T) {
		f, b, tok := setup(t)
		other := tok
		other.Hash = auth.Hash("something else")
		require.ErrorIs(t, b.apply(t, f, PutToken{Token: other, At: at(1)}), ErrTokenExists)
		require.Equal(t, tok.Hash, f.catalog().Tokens[tok.ID].Hash)
	})
	t.Run("RevokeKeepsTheFirstTime", func(t *testing.T) {
		f, b, tok := setup(t)
		b.mustApply(t, f, RevokeToken{ID: tok.ID, At: at(1)}, RevokeToken{ID: tok.ID, At: at(2)})
		got := f.catalog().Tokens[tok.ID]
		require.NotNil(t, got.RevokedAt)
		require.True(t, got.RevokedAt.Equal(at(1)))
	})
	t.Run("RevokeUnknown", func(t *testing.T) {
		f, b, _ := setup(t)
		require.ErrorIs(t, b.apply(t, f, RevokeToken{ID: "0123456789abcdef", At: at(1)}), ErrUnknownToken)
	})
	t.Run("Invalid", func(t *testing.T) {
		f, b, _ := setup(t)
		require.ErrorIs(t, b.apply(t, f, PutToken{Token: auth.Token{ID: "x"}, At: at(1)}), ErrInvalidCommand)
		require.ErrorIs(t, b.apply(t, f, RevokeToken{At: at(1)}), ErrInvalidCommand)
	})
	t.Run("PublishedCopyIsNotShared", func(t *testing.T) {
		f, b, tok := setup(t)
		before := f.catalog()
		b.mustApply(t, f, RevokeToken{ID: tok.ID, At: at(1)})
		require.Nil(t, before.Tokens[tok.ID].RevokedAt)
	})
	t.Run("SnapshotRoundTrip", func(t *testing.T) {
		f, b, tok := setup(t)
		b.mustApply(t, f, RevokeToken{ID: tok.ID, At: at(1)})
		var buf bytes.Buffer
		require.NoError(t, json.NewEncoder(&buf).Encode(snapshotFile{Version: snapshotVersion, Catalog: f.catalog()}))
		g, _ := testFSM(t)
		require.NoError(t, g.Restore(io.NopCloser(&buf)))
		require.Equal(t, f.catalog().Tokens, g.catalog().Tokens)
		require.NotContains(t, buf.String(), `"secret"`)
	})
}
