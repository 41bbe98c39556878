// Package client is a Go client of the Harvest HTTP API (docs/http-api.md),
// usable against any harvestd node, since every node serves every route.
// harvestctl is built on it, so the CLI and the client cannot drift apart.
//
// # Usage
//
//	c := client.New("http://127.0.0.1:7233", client.WithToken(tok))
//	res, err := c.Start(ctx, "order", client.StartRequest{
//		Input:          map[string]any{"order_id": "o-1"},
//		IdempotencyKey: "webhook-evt-abc123",
//	})
//
// # Idempotency
//
// StartRequest.IdempotencyKey, SignalOptions.IdempotencyKey and
// SignalWithStartRequest.IdempotencyKey travel in the Idempotency-Key
// header, never in the body, so that the server recognises a replay even
// when a retried body no longer decodes.
//
// # Absent versus false
//
// The server omits started_fresh and deduplicated from a start without an
// idempotency key. Such fields are *bool here: nil means the server did not
// send the field, which is not the same as false.
//
// # Errors
//
// Every non-2xx answer is returned as an *Error carrying the HTTP status and
// the server's code, message and full body. Match classes of failure with
// errors.Is against the sentinels (ErrNotFound, ErrConflict, ErrTerminal,
// ErrInvalid, ErrUnavailable, ErrTooLarge, and for the shard catalog
// ErrUnsafeDrain and ErrShardUnreachable); transport failures are returned
// wrapped, never as *Error.
//
// # Shard catalog
//
// Nodes started with a raft catalog (harvestd agent with raft flags)
// administer it through Shards, Shard, AddShard, DrainShard, UndrainShard,
// RaftPeers and RemovePeer. Any node answers; writes are forwarded to the
// raft leader. A node on static shards answers ErrNotFound.
//
// # Retries
//
// The client does not retry. Each request is encoded once, before it is
// sent, so a retrying layer can resend the same bytes with the same
// Idempotency-Key.
package client
