// Package fence holds the shard lease and runs the shard owner's fenced
// transactions. Fence acquires, renews and releases the lease (Run is the
// renewal loop) and runs transactions under it (Do, DoBatch); Tx, whose
// BEGIN goes out with the first batch (the fence: the shard lease's
// epoch read under a shared advisory lock) and whose COMMIT may go out
// with the last, so neither costs a round trip; and Clock, the estimate
// of the database's clock that start batches stamp their times with. It
// sits on the engine's second layer, above internal/store, whose lease
// statements it sends (docs/design-notes.md, "The engine in layers").
package fence
