package e2e

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTransientAdmin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"TransportError", errors.New("connection refused"), true},
		{"ServerError", &StatusError{Code: 503, Body: `{"code":"unavailable"}`}, true},
		{"DrainOfAnUnreachableShard", &StatusError{Code: 409, Body: `{"code":"unsafe_drain","error":"unsafe drain: shard 1 is unreachable"}`}, true},
		{"DrainOfTheLastWritableShard", &StatusError{Code: 409, Body: `{"code":"unsafe_drain","error":"unsafe drain: shard 1 is the last writable shard"}`}, false},
		{"Conflict", &StatusError{Code: 409, Body: `{"code":"conflict","error":"unreachable"}`}, false},
		{"BadRequest", &StatusError{Code: 400, Body: `{"code":"invalid_argument"}`}, false},
	} {
		t.Run(c.name, func(t *testing.T) { require.Equal(t, c.want, transientAdmin(c.err)) })
	}
}
