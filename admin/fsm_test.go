package admin

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// fsmBundle is what an FSM test inspects besides the FSM.
type fsmBundle struct {
	nudges int // calls of the changed callback
	index  uint64
}

// testFSM returns an empty FSM whose changed callback counts nudges.
func testFSM(t *testing.T) (*fsm, *fsmBundle) {
	t.Helper()
	b := &fsmBundle{}
	return newFSM(func() { b.nudges++ }), b
}

// apply applies cmd as the next log entry and returns the FSM's rejection.
func (b *fsmBundle) apply(t *testing.T, f *fsm, cmd Command) error {
	t.Helper()
	data, err := encodeCommand(cmd)
	require.NoError(t, err)
	b.index++
	resp := f.Apply(&raft.Log{Index: b.index, Term: 1, Type: raft.LogCommand, Data: data})
	if resp == nil {
		return nil
	}
	err, ok := resp.(error)
	require.True(t, ok, "response %T is not an error", resp)
	return err
}

// mustApply applies cmds and fails on any rejection.
func (b *fsmBundle) mustApply(t *testing.T, f *fsm, cmds ...Command) {
	t.Helper()
	for _, cmd := range cmds {
		require.NoError(t, b.apply(t, f, cmd), "apply %s", cmd.Type())
	}
}

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// toState lists the commands that bring shard 1 from nothing to state.
func toState(state ShardState) []Command {
	writable := []Command{AddShard{ID: 1, DSN: "dsn1", Writable: true, At: at(0)}}
	switch state {
	case StateReadable:
		return []Command{AddShard{ID: 1, DSN: "dsn1", At: at(0)}}
	case StateWritable:
		return writable
	case StateDraining:
		return append(writable, SetShardState{ID: 1, State: StateDraining, At: at(time.Minute)})
	case StateReadOnly:
		return append(writable, SetShardState{ID: 1, State: StateDraining, At: at(time.Minute)},
			SetShardState{ID: 1, State: StateReadOnly, At: at(2 * time.Minute)})
	}
	panic("unknown state " + state)
}

func TestFSMCommands(t *testing.T) {
	t.Parallel()

	type testCase struct {
		name    string
		setup   []Command
		cmd     Command
		wantErr error
		check   func(t *testing.T, c Catalog)
	}
	tests := []testCase{
		{name: "BootstrapSeedsWritableEpoch1",
			cmd: Bootstrap{Shards: map[uint16]string{2: "dsn2", 0: "dsn0"}, Settings: Settings{IdempotencyWindow: time.Hour}, At: at(0)},
			check: func(t *testing.T, c Catalog) {
				require.Equal(t, map[uint16]Shard{
					0: {ID: 0, DSN: "dsn0", State: StateWritable, AddedAt: at(0), StateSince: at(0)},
					2: {ID: 2, DSN: "dsn2", State: StateWritable, AddedAt: at(0), StateSince: at(0)},
				}, c.Shards)
				require.Equal(t, []Epoch{epoch(1, at(0), []uint16{0, 2}, []uint16{0, 2})}, c.Epochs)
				require.Equal(t, time.Hour, c.Settings.IdempotencyWindow)
			}},
		{name: "BootstrapWithoutShardsRejected", cmd: Bootstrap{At: at(0)}, wantErr: ErrInvalidCommand},
		{name: "AddShardReadable", cmd: AddShard{ID: 7, DSN: "dsn7", At: at(0)},
			check: func(t *testing.T, c Catalog) {
				require.Equal(t, StateReadable, c.Shards[7].State)
				require.Equal(t, []Epoch{epoch(1, at(0), []uint16{7}, []uint16{})}, c.Epochs)
			}},
		{name: "AddShardWritable", cmd: AddShard{ID: 7, DSN: "dsn7", Writable: true, At: at(0)},
			check: func(t *testing.T, c Catalog) {
				require.Equal(t, StateWritable, c.Shards[7].State)
				require.Equal(t, []uint16{7}, c.Current().Writable)
			}},
		{name: "AddShardExists", setup: toState(StateReadable), cmd: AddShard{ID: 1, DSN: "other", At: at(time.Hour)},
			wantErr: ErrShardExists},
		{name: "AddShardReservedID", cmd: AddShard{ID: 65535, DSN: "dsn", At: at(0)}, wantErr: ErrInvalidCommand},
		{name: "AddShardEmptyDSN", cmd: AddShard{ID: 3, At: at(0)}, wantErr: ErrInvalidCommand},
		{name: "SetShardStateUnknownShard", cmd: SetShardState{ID: 9, State: StateWritable, At: at(0)},
			wantErr: ErrUnknownShard},
		{name: "SetShardStateRecordsTime", setup: toState(StateWritable),
			cmd: SetShardState{ID: 1, State: StateDraining, At: at(time.Hour)},
			check: func(t *testing.T, c Catalog) {
				require.Equal(t, StateDraining, c.Shards[1].State)
				require.Equal(t, at(time.Hour), c.Shards[1].StateSince)
				require.Equal(t, at(0), c.Shards[1].AddedAt)
			}},
		{name: "SetSettings", cmd: SetSettings{IdempotencyWindow: 2 * time.Hour, At: at(0)},
			check: func(t *testing.T, c Catalog) {
				require.Equal(t, 2*time.Hour, c.Settings.IdempotencyWindow)
				require.Empty(t, c.Epochs)
			}},
		{name: "SetSettingsZeroWindow", cmd: SetSettings{At: at(0)}, wantErr: ErrInvalidCommand},
	}
	// Every (from, to) pair of states, plus an unknown target state.
	states := []ShardState{StateReadable, StateWritable, StateDraining, StateReadOnly}
	for _, from := range states {
		for _, to := range append(states, "bogus") {
			tc := testCase{
				name:  "Transition_" + string(from) + "_" + string(to),
				setup: toState(from),
				cmd:   SetShardState{ID: 1, State: to, At: at(time.Hour)},
			}
			if from.CanBecome(to) {
				tc.check = func(t *testing.T, c Catalog) { require.Equal(t, to, c.Shards[1].State) }
			} else {
				tc.wantErr = ErrInvalidTransition
			}
			tests = append(tests, tc)
		}
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, b := testFSM(t)
			b.mustApply(t, f, tt.setup...)
			before := f.catalog()

			err := b.apply(t, f, tt.cmd)

			after := f.catalog()
			require.Equal(t, b.index, after.Index, "index of the last applied entry")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				after.Index = before.Index
				require.Equal(t, before, after, "a rejected command changes nothing but the index")
				return
			}
			require.NoError(t, err)
			tt.check(t, after)
		})
	}
}

func TestFSMEpochs(t *testing.T) {
	t.Parallel()

	t.Run("AppendedOnlyWhenSetsChange", func(t *testing.T) {
		t.Parallel()
		f, b := testFSM(t)
		steps := []struct {
			cmd        Command
			wantEpochs int
			want       Epoch // current epoch after the step
		}{
			{Bootstrap{Shards: map[uint16]string{0: "a", 1: "b"}, At: at(0)}, 1,
				epoch(1, at(0), []uint16{0, 1}, []uint16{0, 1})},
			{AddShard{ID: 2, DSN: "c", At: at(1 * time.Minute)}, 2,
				epoch(2, at(1*time.Minute), []uint16{0, 1, 2}, []uint16{0, 1})},
			{SetShardState{ID: 2, State: StateWritable, At: at(2 * time.Minute)}, 3,
				epoch(3, at(2*time.Minute), []uint16{0, 1, 2}, []uint16{0, 1, 2})},
			{SetShardState{ID: 1, State: StateDraining, At: at(3 * time.Minute)}, 4,
				epoch(4, at(3*time.Minute), []uint16{0, 1, 2}, []uint16{0, 2})},
			// Draining -> read_only changes neither set.
			{SetShardState{ID: 1, State: StateReadOnly, At: at(4 * time.Minute)}, 4,
				epoch(4, at(3*time.Minute), []uint16{0, 1, 2}, []uint16{0, 2})},
			{SetSettings{IdempotencyWindow: 48 * time.Hour, At: at(5 * time.Minute)}, 4,
				epoch(4, at(3*time.Minute), []uint16{0, 1, 2}, []uint16{0, 2})},
			{SetShardState{ID: 1, State: StateWritable, At: at(6 * time.Minute)}, 5,
				epoch(5, at(6*time.Minute), []uint16{0, 1, 2}, []uint16{0, 1, 2})},
		}
		for i, s := range steps {
			b.mustApply(t, f, s.cmd)
			c := f.catalog()
			require.Len(t, c.Epochs, s.wantEpochs, "step %d (%s)", i, s.cmd.Type())
			cur, _ := c.CurrentEpoch()
			require.Equal(t, s.want, cur, "step %d (%s)", i, s.cmd.Type())
		}
		require.Equal(t, len(steps), b.nudges, "one nudge per apply")
	})

	t.Run("SinceNeverGoesBackwards", func(t *testing.T) {
		t.Parallel()
		f, b := testFSM(t)
		b.mustApply(t, f,
			Bootstrap{Shards: map[uint16]string{0: "a"}, At: at(time.Hour)},
			AddShard{ID: 1, DSN: "b", At: at(0)}, // proposer's clock behind
		)
		c := f.catalog()
		require.Len(t, c.Epochs, 2)
		require.Equal(t, at(time.Hour), c.Epochs[1].Since)
		require.Equal(t, at(0), c.Shards[1].AddedAt, "the shard keeps the command's time")
	})

	t.Run("PrunedByWindow", func(t *testing.T) {
		t.Parallel()
		f, b := testFSM(t)
		b.mustApply(t, f,
			Bootstrap{Shards: map[uint16]string{0: "a"}, Settings: Settings{IdempotencyWindow: time.Hour}, At: at(0)},
			AddShard{ID: 1, DSN: "b", Writable: true, At: at(10 * time.Minute)}, // epoch 2
		)
		require.Len(t, f.catalog().Epochs, 2)

		// Epoch 1 ended at 0:10, more than an hour before 2:00.
		b.mustApply(t, f, SetShardState{ID: 1, State: StateDraining, At: at(2 * time.Hour)}) // epoch 3
		require.Equal(t, []uint64{2, 3}, epochNumbers(f.catalog()))

		// Epoch 2 ended at 2:00; still inside the window at 2:59.
		b.mustApply(t, f, SetShardState{ID: 1, State: StateReadOnly, At: at(179 * time.Minute)})
		require.Equal(t, []uint64{2, 3}, epochNumbers(f.catalog()))

		// A shorter window prunes at once; the current epoch always stays.
		b.mustApply(t, f, SetSettings{IdempotencyWindow: 30 * time.Minute, At: at(179 * time.Minute)})
		require.Equal(t, []uint64{3}, epochNumbers(f.catalog()))
		b.mustApply(t, f, SetSettings{IdempotencyWindow: time.Minute, At: at(100 * time.Hour)})
		require.Equal(t, []uint64{3}, epochNumbers(f.catalog()))
	})
}

func epochNumbers(c Catalog) []uint64 {
	var out []uint64
	for _, e := range c.Epochs {
		out = append(out, e.Number)
	}
	return out
}

func TestFSMBootstrap(t *testing.T) {
	t.Parallel()

	t.Run("Idempotent", func(t *testing.T) {
		t.Parallel()
		f, b := testFSM(t)
		b.mustApply(t, f, Bootstrap{Shards: map[uint16]string{0: "a"}, At: at(0)})
		first := f.catalog()

		b.mustApply(t, f, Bootstrap{Shards: map[uint16]string{5: "other"}, Settings: Settings{IdempotencyWindow: time.Minute}, At: at(time.Hour)})

		second := f.catalog()
		require.Equal(t, first.Index+1, second.Index)
		second.Index = first.Index
		require.Equal(t, first, second)
	})

	t.Run("IgnoredAfterAddShard", func(t *testing.T) {
		t.Parallel()
		f, b := testFSM(t)
		b.mustApply(t, f, AddShard{ID: 3, DSN: "c", Writable: true, At: at(0)},
			Bootstrap{Shards: map[uint16]string{0: "a"}, At: at(time.Minute)})
		require.Equal(t, []uint16{3}, f.catalog().Current().Readable)
	})
}

func TestFSMUndecodableEntryPanics(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		data []byte
	}{
		{name: "Empty", data: nil},
		{name: "UnknownType", data: append([]byte{99}, "{}"...)},
		{name: "BadJSON", data: append([]byte{byte(CmdAddShard)}, "{not json"...)},
		{name: "WrongFieldType", data: append([]byte{byte(CmdSetShardState)}, `{"id":"x"}`...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := testFSM(t)
			require.Panics(t, func() { f.Apply(&raft.Log{Index: 1, Data: tt.data}) })
		})
	}
}

func TestCommandEncoding(t *testing.T) {
	t.Parallel()

	cmds := []Command{
		Bootstrap{Shards: map[uint16]string{0: "a", 65534: "z"}, Settings: Settings{IdempotencyWindow: time.Hour}, At: at(0)},
		AddShard{ID: 4, DSN: "postgres://x/y", Writable: true, At: at(time.Second)},
		SetShardState{ID: 4, State: StateDraining, At: at(time.Minute)},
		SetSettings{IdempotencyWindow: 90 * time.Minute, At: at(time.Hour)},
	}
	for _, cmd := range cmds {
		t.Run(cmd.Type().String(), func(t *testing.T) {
			t.Parallel()
			data, err := encodeCommand(cmd)
			require.NoError(t, err)
			require.Equal(t, byte(cmd.Type()), data[0], "type byte")
			got, err := decodeCommand(data)
			require.NoError(t, err)
			require.Equal(t, cmd, got)
		})
	}

	t.Run("StampSetsOnlyZeroTime", func(t *testing.T) {
		t.Parallel()
		now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600))
		require.Equal(t, now.UTC(), AddShard{ID: 1}.stamped(now).(AddShard).At)
		require.Equal(t, at(0), AddShard{ID: 1, At: at(0)}.stamped(now).(AddShard).At)
	})
}

// memSink is a raft.SnapshotSink in memory; failAfter makes Write fail
// once that many bytes were written.
type memSink struct {
	buf       bytes.Buffer
	failAfter int
	closed    bool
	cancelled bool
}

var _ raft.SnapshotSink = (*memSink)(nil)

func (s *memSink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.buf.Len()+len(p) > s.failAfter {
		return 0, errors.New("disk full")
	}
	return s.buf.Write(p)
}
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

func TestFSMSnapshot(t *testing.T) {
	t.Parallel()

	// populated returns an FSM with shards, several epochs and settings.
	populated := func(t *testing.T) *fsm {
		f, b := testFSM(t)
		b.mustApply(t, f,
			Bootstrap{Shards: map[uint16]string{0: "a", 1: "b"}, Settings: Settings{IdempotencyWindow: time.Hour}, At: at(0)},
			AddShard{ID: 2, DSN: "c", At: at(time.Minute)},
			SetShardState{ID: 1, State: StateDraining, At: at(2 * time.Minute)},
		)
		return f
	}

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		src := populated(t)
		snap, err := src.Snapshot()
		require.NoError(t, err)
		sink := &memSink{}
		require.NoError(t, snap.Persist(sink))
		snap.Release()
		require.True(t, sink.closed)
		require.False(t, sink.cancelled)

		dst, b := testFSM(t)
		require.NoError(t, dst.Restore(io.NopCloser(&sink.buf)))

		require.Equal(t, src.catalog(), dst.catalog())
		require.Equal(t, uint64(3), dst.catalog().Index)
		require.Equal(t, 1, b.nudges, "restore nudges")
	})

	t.Run("SnapshotIsACopy", func(t *testing.T) {
		t.Parallel()
		f, b := testFSM(t)
		b.mustApply(t, f, Bootstrap{Shards: map[uint16]string{0: "a"}, At: at(0)})
		snap, err := f.Snapshot()
		require.NoError(t, err)
		b.mustApply(t, f, AddShard{ID: 1, DSN: "b", At: at(time.Minute)}) // runs while Persist would

		sink := &memSink{}
		require.NoError(t, snap.Persist(sink))
		dst, _ := testFSM(t)
		require.NoError(t, dst.Restore(io.NopCloser(&sink.buf)))
		require.Len(t, dst.catalog().Shards, 1)
	})

	t.Run("PersistFailureCancels", func(t *testing.T) {
		t.Parallel()
		snap, err := populated(t).Snapshot()
		require.NoError(t, err)
		sink := &memSink{failAfter: 10}
		require.ErrorContains(t, snap.Persist(sink), "disk full")
		require.True(t, sink.cancelled)
		require.False(t, sink.closed)
	})

	t.Run("RestoreRejectsGarbage", func(t *testing.T) {
		t.Parallel()
		f, _ := testFSM(t)
		require.Error(t, f.Restore(io.NopCloser(bytes.NewBufferString("{nope"))))
		require.Error(t, f.Restore(io.NopCloser(bytes.NewBufferString(`{"version":99}`))))
	})
}
