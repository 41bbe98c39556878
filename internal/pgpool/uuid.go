package pgpool

// uuid.UUID support: pgx encodes and scans github.com/google/uuid's UUID
// as PostgreSQL uuid directly.
//
// Without it pgx takes uuid.UUID through database/sql's Valuer and
// Scanner: every value becomes its 36-character text form and is parsed
// back, and each element of a []uuid.UUID argument first fails an array
// encode plan (an error built with fmt.Errorf) before that fallback is
// found. The engine's multi-row statements pass arrays of ids on every
// batch, which made this a visible share of a node's CPU.

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// RegisterUUID makes m encode uuid.UUID values and scan into *uuid.UUID with
// pgx's own uuid codec.
func RegisterUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapEncode}, m.TryWrapEncodePlanFuncs...)
	m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryWrapScan}, m.TryWrapScanPlanFuncs...)
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

// target is a *uuid.UUID as pgx's UUIDScanner.
type target uuid.UUID

// ScanUUID stores v; NULL leaves the target as it was, as uuid.UUID's own
// Scan does.
func (t *target) ScanUUID(v pgtype.UUID) error {
	if v.Valid {
		*t = v.Bytes
	}
	return nil
}

func tryWrapScan(dst any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	if id, ok := dst.(*uuid.UUID); ok {
		return &scanPlan{}, (*target)(id), true
	}
	return nil, nil, false
}

type scanPlan struct{ next pgtype.ScanPlan }

func (p *scanPlan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *scanPlan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*target)(dst.(*uuid.UUID)))
}
