package admin

import "context"

// Barrier waits until every command committed before it is applied to this
// node's catalog. A new leader calls it before decisions that read the
// catalog (drain safety checks), so it never decides on a lagging view.
// Leader only: a follower gets *NotLeaderError.
func (a *Admin) Barrier(ctx context.Context) error {
	rn, err := a.running()
	if err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := wait(ctx, rn.raft.Barrier(remaining(ctx))); err != nil {
		return a.raftError(rn, "barrier", err)
	}
	return nil
}
