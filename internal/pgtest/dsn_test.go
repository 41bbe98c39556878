package pgtest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithDBName(t *testing.T) {
	t.Parallel()
	tests := []struct{ dsn, db, want string }{
		{"postgres://u:p@localhost:5432/base?sslmode=disable", "t_1", "postgres://u:p@localhost:5432/t_1?sslmode=disable"},
		{"postgresql://localhost", "x", "postgresql://localhost/x"},
		{"host=/tmp port=5432 dbname=base", "t_1", "host=/tmp port=5432 dbname=base dbname='t_1'"},
		{"host=/tmp", "it's", `host=/tmp dbname='it\'s'`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, withDBName(tt.dsn, tt.db), "withDBName(%q, %q)", tt.dsn, tt.db)
	}
}
