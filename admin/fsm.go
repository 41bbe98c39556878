package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// snapshotVersion is the version of the snapshot encoding.
const snapshotVersion = 1

// fsm is the raft state machine over the catalog.
//
// raft calls Apply, Snapshot and Restore from one goroutine, never
// concurrently; Persist runs concurrently with Apply on a copy. mu only
// protects state from racing readers (Snapshot's copy and Restore's swap,
// as Consul's stateLock does). After every change the fsm publishes a
// private copy through published, which Catalog readers load without a
// lock, and calls changed.
type fsm struct {
	mu    sync.RWMutex
	state Catalog

	published atomic.Pointer[Catalog]
	changed   func()
}

var (
	_ raft.FSM         = (*fsm)(nil)
	_ raft.FSMSnapshot = (*fsmSnapshot)(nil)
)

func newFSM(changed func()) *fsm {
	f := &fsm{changed: changed}
	f.published.Store(&Catalog{})
	return f
}

// catalog returns the last published catalog; it must not be modified.
func (f *fsm) catalog() Catalog { return *f.published.Load() }

// Apply applies one command entry. It returns nil or a rejection error
// (ErrUnknownShard, ErrShardExists, ErrInvalidTransition,
// ErrInvalidCommand), which Admin.Apply hands back to the proposer. An
// entry that does not decode panics: the log is not one this version can
// apply, and going on would diverge from the other nodes.
func (f *fsm) Apply(l *raft.Log) any {
	cmd, err := decodeCommand(l.Data)
	if err != nil {
		panic(fmt.Sprintf("admin fsm: log index %d: %v", l.Index, err))
	}
	f.mu.Lock()
	f.state.Index = l.Index // a command's apply sees its own index
	resp := cmd.check()
	if resp == nil {
		resp = cmd.apply(&f.state)
	}
	pub := f.state.Clone()
	f.mu.Unlock()
	f.publish(&pub)
	return resp
}

// Snapshot copies the catalog; Persist encodes the copy.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return &fsmSnapshot{state: f.state.Clone()}, nil
}

// Restore replaces the catalog with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var snap snapshotFile
	if err := json.NewDecoder(rc).Decode(&snap); err != nil {
		return fmt.Errorf("decode admin snapshot: %w", err)
	}
	if snap.Version != snapshotVersion {
		return fmt.Errorf("admin snapshot version %d: want %d", snap.Version, snapshotVersion)
	}
	pub := snap.Catalog.Clone()
	f.mu.Lock()
	f.state = snap.Catalog
	f.mu.Unlock()
	f.publish(&pub)
	return nil
}

func (f *fsm) publish(c *Catalog) {
	f.published.Store(c)
	if f.changed != nil {
		f.changed()
	}
}

// snapshotFile is the snapshot encoding.
type snapshotFile struct {
	Version int     `json:"version"`
	Catalog Catalog `json:"catalog"`
}

// fsmSnapshot is a point-in-time copy of the catalog.
type fsmSnapshot struct{ state Catalog }

// Persist writes the copy as JSON and cancels the sink on failure.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	err := json.NewEncoder(sink).Encode(snapshotFile{Version: snapshotVersion, Catalog: s.state})
	if err == nil {
		return sink.Close()
	}
	return fmt.Errorf("persist admin snapshot: %w", errors.Join(err, sink.Cancel()))
}

// Release is a no-op: the copy holds no resources.
func (s *fsmSnapshot) Release() {}
