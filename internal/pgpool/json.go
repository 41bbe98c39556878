package pgpool

import (
	"encoding/json"

	"github.com/jackc/pgx/v5/pgtype"
)

// Raw jsonb: pgx scans json and jsonb into *json.RawMessage through
// json.Unmarshal, which validates and copies every document. Harvest
// stores only JSON it validated on the way in and reads histories back on
// every workflow task, so RegisterRawJSON scans *json.RawMessage as bytes.

// RegisterRawJSON makes m scan json and jsonb into *json.RawMessage as
// a copy of the document's bytes (SQL NULL leaves nil).
func RegisterRawJSON(m *pgtype.Map) {
	for _, name := range []string{"json", "jsonb"} {
		t, ok := m.TypeForName(name)
		if !ok {
			continue
		}
		m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: rawJSONCodec{t.Codec}})
	}
}

// rawJSONCodec is a json or jsonb codec whose scans into *json.RawMessage
// go through its plan for *[]byte.
type rawJSONCodec struct{ pgtype.Codec }

func (c rawJSONCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*json.RawMessage); ok {
		if plan := c.Codec.PlanScan(m, oid, format, new([]byte)); plan != nil {
			return rawScanPlan{plan}
		}
	}
	return c.Codec.PlanScan(m, oid, format, target)
}

type rawScanPlan struct{ bytes pgtype.ScanPlan }

func (p rawScanPlan) Scan(src []byte, dst any) error {
	return p.bytes.Scan(src, (*[]byte)(dst.(*json.RawMessage)))
}
