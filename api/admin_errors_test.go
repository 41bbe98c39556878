package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every error a catalog call can name gets its own status and code; none
// is a 500.
func TestAdminErrorStatuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{ErrUnsafeDrain, http.StatusConflict, "unsafe_drain"},
		{ErrUnknownShard, http.StatusNotFound, codeNotFound},
		{ErrUnknownPeer, http.StatusNotFound, codeNotFound},
		{ErrInvalidTransition, http.StatusConflict, codeConflict},
		{ErrShardUnreachable, http.StatusUnprocessableEntity, "shard_unreachable"},
		{ErrPeerIsLeader, http.StatusConflict, codeConflict},
		{ErrOutcomeUnknown, http.StatusServiceUnavailable, codeUnavailable},
	} {
		t.Run(c.err.Error(), func(t *testing.T) {
			var got *apiError
			require.True(t, errors.As((&Server{}).adminError(fmt.Errorf("op: %w", c.err)), &got))
			require.Equal(t, c.status, got.status)
			require.Equal(t, c.code, got.code)
			require.Contains(t, got.msg, c.err.Error())
		})
	}
}
