package clusterkey

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	key32 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	cases := []struct {
		name string
		text string
		err  error
	}{
		{"ThirtyTwoBytes", key32, nil},
		{"WhiteSpaceIgnored", "  " + key32 + "\n", nil},
		{"TooShort", base64.StdEncoding.EncodeToString([]byte("short")), ErrTooShort},
		{"NotBase64", "not base64 at all!", ErrNotBase64},
		{"Empty", "", ErrTooShort},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			if tc.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.err)
		})
	}
}

func TestDerive(t *testing.T) {
	a, err := FromBytes([]byte(strings.Repeat("a", 32)))
	require.NoError(t, err)
	b, err := FromBytes([]byte(strings.Repeat("b", 32)))
	require.NoError(t, err)
	t.Run("LabelsDiffer", func(t *testing.T) {
		require.NotEqual(t, a.Derive(LabelGossip), a.Derive(LabelHTTP))
	})
	t.Run("KeysDiffer", func(t *testing.T) {
		require.NotEqual(t, a.Derive(LabelHTTP), b.Derive(LabelHTTP))
	})
	t.Run("Stable", func(t *testing.T) {
		require.Equal(t, a.Derive(LabelRaft), a.Derive(LabelRaft))
		require.Len(t, a.Derive(LabelRaft), 32)
	})
	t.Run("NeverPrinted", func(t *testing.T) {
		require.NotContains(t, fmt.Sprintf("%v %+v %#v %s", a, a, a, a), strings.Repeat("a", 8))
	})
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.key")
	require.NoError(t, os.WriteFile(path, []byte("c2VjcmV0"), 0o600))
	_, err := Load(path)
	require.ErrorIs(t, err, ErrTooShort)
	require.NotContains(t, err.Error(), "c2VjcmV0")
	_, err = Load(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestKeyring(t *testing.T) {
	a, b := strings.Repeat("a", 32), strings.Repeat("b", 32)
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	t.Run("SeveralLinesFirstIsPrimary", func(t *testing.T) {
		k, err := Parse([]byte("# rotation: b is new\n" + enc(b) + "\n\n  " + enc(a) + "  \n"))
		require.NoError(t, err)
		require.Equal(t, 2, k.Len())
		only, err := FromBytes([]byte(b))
		require.NoError(t, err)
		require.Equal(t, only.Derive(LabelHTTP), k.Derive(LabelHTTP), "the first line signs")
		old, err := FromBytes([]byte(a))
		require.NoError(t, err)
		require.Equal(t, [][]byte{only.Derive(LabelHTTP), old.Derive(LabelHTTP)}, k.DeriveAll(LabelHTTP), "every line verifies")
	})
	t.Run("BadLineIsNamedNotShown", func(t *testing.T) {
		_, err := Parse([]byte(enc(a) + "\nc2VjcmV0\n"))
		require.ErrorIs(t, err, ErrTooShort)
		require.ErrorContains(t, err, "line 2")
		require.NotContains(t, err.Error(), "c2VjcmV0")
	})
	t.Run("OnlyCommentsIsNoKey", func(t *testing.T) {
		_, err := Parse([]byte("# none\n\n"))
		require.ErrorIs(t, err, ErrTooShort)
	})
	t.Run("JoinKeepsThePrimaryAndDropsDuplicates", func(t *testing.T) {
		ka, err := FromBytes([]byte(a))
		require.NoError(t, err)
		kab, err := FromBytes([]byte(b), []byte(a))
		require.NoError(t, err)
		j := ka.Join(kab)
		require.Equal(t, 2, j.Len())
		require.Equal(t, ka.Derive(LabelRaft), j.Derive(LabelRaft))
	})
}
