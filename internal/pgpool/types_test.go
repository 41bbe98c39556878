package pgpool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgpool"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func setup(t *testing.T) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgtest.NewEmptyDB(t))
	require.NoError(t, err)
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	pgpool.RegisterUUID(conn.TypeMap())
	return conn
}

func TestRegisterUUID(t *testing.T) {
	ctx := context.Background()
	conn := setup(t)
	a, b := uuid.New(), uuid.New()

	t.Run("PlansSkipTheValuer", func(t *testing.T) {
		for _, v := range []any{a, []uuid.UUID{a, b}} {
			oid := uint32(pgtype.UUIDOID)
			if _, ok := v.([]uuid.UUID); ok {
				oid = pgtype.UUIDArrayOID
			}
			buf, err := conn.TypeMap().Encode(oid, pgtype.BinaryFormatCode, v, nil)
			require.NoError(t, err)
			require.NotEmpty(t, buf)
		}
		plan := conn.TypeMap().PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, a)
		require.NotNil(t, plan)
		require.NotContains(t, typeName(plan), "DriverValuer", "uuid.UUID still goes through database/sql's Valuer")
	})
	t.Run("RoundTrip", func(t *testing.T) {
		var got uuid.UUID
		require.NoError(t, conn.QueryRow(ctx, `SELECT $1::uuid`, a).Scan(&got))
		require.Equal(t, a, got)
		require.NoError(t, conn.QueryRow(ctx, `SELECT $1::uuid::text`, a).Scan(new(string)))
	})
	t.Run("Arrays", func(t *testing.T) {
		rows, err := conn.Query(ctx, `SELECT id FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n) ORDER BY n`, []uuid.UUID{a, b})
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{a, b}, got)
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM unnest($1::uuid[]) u WHERE u = ANY($2)`,
			[]uuid.UUID{a, b}, []uuid.UUID{b}).Scan(&n))
		require.Equal(t, 1, n)
	})
	t.Run("NullLeavesTheTarget", func(t *testing.T) {
		got := a
		require.NoError(t, conn.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&got))
		require.Equal(t, a, got, "as uuid.UUID's own Scan")
	})
	t.Run("TextStillScans", func(t *testing.T) {
		var got uuid.UUID
		require.NoError(t, conn.QueryRow(ctx, `SELECT $1::text`, a.String()).Scan(&got))
		require.Equal(t, a, got)
	})
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

func TestRegisterRawJSON(t *testing.T) {
	ctx := context.Background()
	conn := setup(t)
	pgpool.RegisterRawJSON(conn.TypeMap())
	for _, typ := range []string{"json", "jsonb"} {
		t.Run(typ, func(t *testing.T) {
			var got json.RawMessage
			require.NoError(t, conn.QueryRow(ctx, `SELECT '{"a": [1, "x"]}'::`+typ).Scan(&got))
			require.JSONEq(t, `{"a": [1, "x"]}`, string(got))
			require.NoError(t, conn.QueryRow(ctx, `SELECT 'null'::`+typ).Scan(&got))
			require.Equal(t, "null", string(got))
			require.NoError(t, conn.QueryRow(ctx, `SELECT NULL::`+typ).Scan(&got))
			require.Nil(t, got)
			var m map[string]any // other targets still decode
			require.NoError(t, conn.QueryRow(ctx, `SELECT '{"b": 2}'::`+typ).Scan(&m))
			require.Equal(t, map[string]any{"b": 2.0}, m)
		})
	}
	plan := conn.TypeMap().PlanScan(pgtype.JSONBOID, pgtype.BinaryFormatCode, new(json.RawMessage))
	require.NotContains(t, fmt.Sprintf("%T", plan), "Unmarshal", "json.RawMessage still goes through json.Unmarshal")
}
