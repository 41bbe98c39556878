package pgpool

// uuid.UUID support: pgx encodes github.com/google/uuid's UUID as
// PostgreSQL uuid directly.
//
// Without it pgx encodes uuid.UUID through database/sql's Valuer: every
// value becomes its 36-character text form and is parsed back, and each
// element of a []uuid.UUID argument first fails an array
// encode plan (an error built with fmt.Errorf) before that fallback is
// found. The engine's multi-row statements pass arrays of ids on every
// batch, which made this a visible share of a node's CPU.

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// RegisterUUID makes m encode uuid.UUID values with pgx's own uuid codec.
// Scans are left alone: pgx asks a target's sql.Scanner before any wrapper,
// and uuid.UUID's Scan of the binary form is a 16-byte copy.
func RegisterUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapEncode}, m.TryWrapEncodePlanFuncs...)
}

// value is a uuid.UUID as pgx's UUIDValuer.
type value uuid.UUID

func (v value) UUIDValue() (pgtype.UUID, error) {
	return pgtype.UUID{Bytes: v, Valid: true}, nil
}

func tryWrapEncode(v any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if id, ok := v.(uuid.UUID); ok {
		return &encodePlan{}, value(id), true
	}
	return nil, nil, false
}

type encodePlan struct{ next pgtype.EncodePlan }

func (p *encodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *encodePlan) Encode(v any, buf []byte) ([]byte, error) {
	return p.next.Encode(value(v.(uuid.UUID)), buf)
}
