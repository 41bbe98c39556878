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
// ErrInvalid, ErrUnavailable, ErrTooLarge, ErrGated, ErrInvalidInput with
// Error.Violations, ErrCallbackRefused, ErrUnknownSignal and
// ErrInvalidPayload for signals a workflow does not declare or cannot
// decode, for the shard catalog ErrUnsafeDrain and ErrShardUnreachable,
// and for authentication ErrUnauthenticated and ErrForbidden); transport
// failures are returned
// wrapped, never as *Error.
//
// # Shard catalog
//
// Nodes started with a raft catalog (harvestd agent with raft flags)
// administer it through Shards, Shard, AddShard, DrainShard, UndrainShard,
// RaftPeers and RemovePeer. Any node answers; writes are forwarded to the
// raft leader. A node on static shards answers ErrNotFound.
//
// # Typed handles
//
// SignalOf and WorkflowOf bind the SDK's typed definitions
// (harvest.NewSignal, harvest.NewWorkflow) to a client, so a sender uses the
// very definition the workflow receives with:
//
//	orders := client.WorkflowOf(c, d.Order) // *harvest.Workflow[OrderInput, OrderResult]
//	run, err := orders.StartIdempotent(ctx, in, "webhook-evt-abc123", client.WithWorkflowID("o-1"))
//	_, err = client.SignalOf(c, demo.Approved).SendIdempotent(ctx, run.ExecutionID, demo.Approval{By: "ann"}, "approval-o-1")
//	res, closed, err := orders.Result(ctx, run.ExecutionID, 30*time.Second) // res is an OrderResult
//
// WorkflowOf takes a harvest.WorkflowType: the definition, or, in a client
// that does not link the worker's code, a reference naming the workflow
// and its types (nothing checks them against the worker's):
//
//	payouts := client.WorkflowOf(c, harvest.WorkflowRef[PayoutInput, PayoutResult]("payout"))
//
// # Retries
//
// Each request is encoded once, before it is sent, and every attempt
// resends the same bytes with the same Idempotency-Key. By default
// (DefaultRetryPolicy) a request is retried on 503 unavailable, honouring
// Retry-After, and when the connection could not be made; a request that
// is safe to replay (a GET, a keyed start or signal, a terminate) is also
// retried after a lost answer. WithRetryPolicy tunes the bounds and
// WithoutRetries turns retries off. 503 admission_blocked (ErrGated) is not
// retried.
//
// # Admission gates
//
// CloseGate, OpenGate and Gates administer the admission gates that block
// fresh starts of the cluster, of a workflow name or of a shard.
//
// # Tokens
//
// A node started with harvestd --auth tokens wants a bearer token
// (WithToken) of the route's scope, read < write < admin: a missing or
// refused token answers ErrUnauthenticated, too low a scope ErrForbidden.
// With an admin token, CreateToken mints a token (its Secret is shown in
// that answer only, and the call is never retried after it may have been
// sent), Tokens lists them and RevokeToken revokes one. Routing shows
// where the node sends requests.
package client
