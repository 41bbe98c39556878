package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckJSONValues covers the values PostgreSQL's jsonb refuses.
func TestCheckJSONValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, json, root string
		field            string // "" accepts the value
	}{
		{name: "Plain", json: `{"input": {"a": [1, -2.5e3, "x", true, null]}}`},
		{name: "EscapedBackslashBeforeU0000", json: `{"input": "a\\u0000b"}`},
		{name: "SurrogatePair", json: `{"input": "\ud83d\ude00"}`},
		{name: "NumberAtLimits", json: `{"input": 1e1000, "memo": -1E-1000}`},
		{name: "LongNumberUnderLimit", json: `[` + strings.Repeat("9", maxNumberLen) + `]`, root: "body"},
		{name: "HugeExponent", json: `{"input": 1e999999}`, field: "input"},
		{name: "HugeNegativeExponent", json: `{"input": {"x": 1e-999999}}`, field: "input.x"},
		{name: "ExponentOverflowsInt", json: `{"memo": 1e99999999999999999999999}`, field: "memo"},
		{name: "TooManyDigits", json: `{"input": [0, ` + strings.Repeat("7", 500_000) + `]}`, field: "input[1]"},
		{name: "LoneHighSurrogate", json: `{"input": "\ud800"}`, field: "input"},
		{name: "HighSurrogateThenText", json: `{"input": "\ud800\u0041"}`, field: "input"},
		{name: "LoneLowSurrogate", json: `{"memo": {"k": ["\udc00"]}}`, field: "memo.k[0]"},
		{name: "U0000", json: `{"signal_payload": "a\u0000"}`, field: "signal_payload"},
		{name: "U0000InKey", json: `{"memo": {"\u0000": 1}}`, field: "memo"},
		{name: "EscapedKeyNamed", json: `{"memo": {"a\"b": "\ud800"}}`, field: `memo.a"b`},
		{name: "RootPayload", json: `"\ud800"`, root: "body", field: "body"},
		{name: "NestedArrays", json: `[[1], [2, [3, 1e5000]]]`, root: "body", field: "body[1][1][1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := checkJSONValues([]byte(c.json), c.root)
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			var ae *apiError
			require.True(t, errors.As(err, &ae), "got %v", err)
			require.Equal(t, http.StatusBadRequest, ae.status)
			require.Equal(t, codeInvalidJSON, ae.code)
			require.Equal(t, c.field, ae.extra["field"])
			require.Contains(t, ae.msg, strconv.Quote(c.field))
		})
	}
}
