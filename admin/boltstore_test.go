package admin

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

func testBoltStore(t *testing.T) (*boltStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), raftDBFile)
	s, err := openBoltStore(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func TestBoltStore(t *testing.T) {
	t.Parallel()

	logs := func(from, to uint64) []*raft.Log {
		var out []*raft.Log
		for i := from; i <= to; i++ {
			out = append(out, &raft.Log{
				Index: i, Term: 2, Type: raft.LogCommand, Data: []byte{byte(i)},
				AppendedAt: time.Date(2026, 1, 1, 0, 0, int(i), 0, time.UTC),
			})
		}
		return out
	}

	t.Run("EmptyLog", func(t *testing.T) {
		t.Parallel()
		s, _ := testBoltStore(t)
		first, err := s.FirstIndex()
		require.NoError(t, err)
		last, err := s.LastIndex()
		require.NoError(t, err)
		require.Zero(t, first)
		require.Zero(t, last)
		require.ErrorIs(t, s.GetLog(1, &raft.Log{}), raft.ErrLogNotFound)
	})

	t.Run("StoreGetDeleteRange", func(t *testing.T) {
		t.Parallel()
		s, _ := testBoltStore(t)
		require.NoError(t, s.StoreLogs(logs(1, 5)))
		require.NoError(t, s.StoreLog(logs(6, 6)[0]))

		var got raft.Log
		require.NoError(t, s.GetLog(4, &got))
		require.Equal(t, *logs(4, 4)[0], got)

		require.NoError(t, s.DeleteRange(1, 3))
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		require.Equal(t, uint64(4), first)
		require.Equal(t, uint64(6), last)
		require.ErrorIs(t, s.GetLog(3, &got), raft.ErrLogNotFound)
	})

	t.Run("StableKeys", func(t *testing.T) {
		t.Parallel()
		s, _ := testBoltStore(t)
		_, err := s.Get([]byte("k"))
		require.EqualError(t, err, "not found", "raft matches this text")
		_, err = s.GetUint64([]byte("CurrentTerm"))
		require.EqualError(t, err, "not found")

		require.NoError(t, s.Set([]byte("k"), []byte("v")))
		require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 42))
		v, err := s.Get([]byte("k"))
		require.NoError(t, err)
		require.Equal(t, []byte("v"), v)
		n, err := s.GetUint64([]byte("CurrentTerm"))
		require.NoError(t, err)
		require.Equal(t, uint64(42), n)
	})

	t.Run("SurvivesReopen", func(t *testing.T) {
		t.Parallel()
		s, path := testBoltStore(t)
		require.NoError(t, s.StoreLogs(logs(1, 3)))
		require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 7))
		require.NoError(t, s.Close())

		s2, err := openBoltStore(path)
		require.NoError(t, err)
		defer s2.Close()
		last, _ := s2.LastIndex()
		require.Equal(t, uint64(3), last)
		n, _ := s2.GetUint64([]byte("CurrentTerm"))
		require.Equal(t, uint64(7), n)
	})

	t.Run("WritesAfterCloseDropped", func(t *testing.T) {
		t.Parallel()
		s, _ := testBoltStore(t)
		require.NoError(t, s.Close())
		require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 3), "raft panics on a failed term write")
		require.NoError(t, s.StoreLogs(logs(1, 1)))
		_, err := s.GetUint64([]byte("CurrentTerm"))
		require.Error(t, err)
	})

	t.Run("SecondOpenTimesOut", func(t *testing.T) {
		t.Parallel()
		_, path := testBoltStore(t)
		_, err := openBoltStore(path)
		require.Error(t, err)
	})
}
