package admin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// boltStore is raft's LogStore and StableStore in one bbolt file.
//
// It stands in for github.com/hashicorp/raft-boltdb/v2, whose v2.3.1
// release imports github.com/hashicorp/go-metrics/compat, a package that
// go-metrics v0.7.0 (required by raft v1.8.0 and memberlist v0.7.0) no
// longer has (raft-boltdb#67 removes the import, unreleased). The file
// layout is raft-boltdb's: bucket "logs" maps 8-byte big-endian indexes to
// msgpack-encoded raft.Log values (same codec settings), bucket "conf"
// holds the stable keys, so swapping to the library once it builds again
// should need no migration (not checked against the library itself, which
// does not compile in this module).
type boltStore struct {
	db *bbolt.DB
}

var (
	_ raft.LogStore    = (*boltStore)(nil)
	_ raft.StableStore = (*boltStore)(nil)
)

var (
	bucketLogs = []byte("logs")
	bucketConf = []byte("conf")
)

// errKeyNotFound is StableStore's missing-key error. raft compares error
// strings with "not found" (api.go, raft.go), so the text is fixed.
var errKeyNotFound = errors.New("not found")

// boltOpenTimeout bounds waiting for the file lock: a second process on
// the same data dir fails instead of hanging.
const boltOpenTimeout = time.Second

// openBoltStore opens or creates the store at path.
func openBoltStore(path string) (*boltStore, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: boltOpenTimeout})
	if err != nil {
		return nil, fmt.Errorf("open raft store %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketLogs, bucketConf} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("init raft store %s: %w", path, err)
	}
	return &boltStore{db: db}, nil
}

// Close closes the file.
func (b *boltStore) Close() error { return b.db.Close() }

// FirstIndex returns the first stored log index, 0 when the log is empty.
func (b *boltStore) FirstIndex() (uint64, error) {
	return b.edgeIndex(func(c *bbolt.Cursor) []byte { k, _ := c.First(); return k })
}

// LastIndex returns the last stored log index, 0 when the log is empty.
func (b *boltStore) LastIndex() (uint64, error) {
	return b.edgeIndex(func(c *bbolt.Cursor) []byte { k, _ := c.Last(); return k })
}

func (b *boltStore) edgeIndex(edge func(*bbolt.Cursor) []byte) (uint64, error) {
	var idx uint64
	err := b.db.View(func(tx *bbolt.Tx) error {
		if k := edge(tx.Bucket(bucketLogs).Cursor()); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog reads the entry at index into out, or returns raft.ErrLogNotFound.
func (b *boltStore) GetLog(index uint64, out *raft.Log) error {
	return b.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(indexKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return codec.NewDecoderBytes(v, &codec.MsgpackHandle{}).Decode(out)
	})
}

// StoreLog stores one entry.
func (b *boltStore) StoreLog(l *raft.Log) error { return b.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one transaction.
func (b *boltStore) StoreLogs(logs []*raft.Log) error {
	return b.update(func(tx *bbolt.Tx) error {
		bucket := tx.Bucket(bucketLogs)
		for _, l := range logs {
			v, err := encodeLog(l)
			if err != nil {
				return fmt.Errorf("encode log %d: %w", l.Index, err)
			}
			if err := bucket.Put(indexKey(l.Index), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange deletes the entries from lo to hi, inclusive.
func (b *boltStore) DeleteRange(lo, hi uint64) error {
	return b.update(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(indexKey(lo)); k != nil && binary.BigEndian.Uint64(k) <= hi; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set stores a stable key.
func (b *boltStore) Set(k, v []byte) error {
	return b.update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketConf).Put(k, v) })
}

// update runs a write transaction. A write after Close is dropped, not
// failed: raft's heartbeat fast path runs on transport goroutines that
// raft.Shutdown does not wait for, so a heartbeat that arrived just
// before shutdown can still save a new term after the store was closed,
// and raft panics when saving the term fails. The node is shut down by
// then; it relearns the term from the leader when it restarts.
func (b *boltStore) update(fn func(*bbolt.Tx) error) error {
	err := b.db.Update(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil
	}
	return err
}

// Get reads a stable key, or returns errKeyNotFound.
func (b *boltStore) Get(k []byte) ([]byte, error) {
	var out []byte
	err := b.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketConf).Get(k)
		if v == nil {
			return errKeyNotFound
		}
		out = bytes.Clone(v) // v is only valid inside the transaction
		return nil
	})
	return out, err
}

// SetUint64 stores a stable key holding a uint64.
func (b *boltStore) SetUint64(k []byte, v uint64) error { return b.Set(k, indexKey(v)) }

// GetUint64 reads a stable key holding a uint64, or returns errKeyNotFound.
func (b *boltStore) GetUint64(k []byte) (uint64, error) {
	v, err := b.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("stable key %q: %d bytes, want 8", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func indexKey(i uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), i) }

// encodeLog encodes l as raft-boltdb does: msgpack with the time format
// of go-msgpack v0.5 (TimeNotBuiltin), which every decoder reads.
func encodeLog(l *raft.Log) ([]byte, error) {
	var out []byte
	h := &codec.MsgpackHandle{}
	h.TimeNotBuiltin = true
	err := codec.NewEncoderBytes(&out, h).Encode(l)
	return out, err
}
