// Package migrations owns Harvest's per-shard PostgreSQL schema.
//
// The schema lives in embedded SQL files named NNN_name.up.sql and
// NNN_name.down.sql, where NNN is a positive version number. Apply brings a
// shard database up to date: it runs every pending up migration in numeric
// order, each in its own transaction, and records it in the
// harvest_schema_migrations table (version, name, applied_at).
//
// Apply is idempotent and safe to call from many processes at once: it holds
// the session-level advisory lock AdvisoryLockKey on one dedicated connection
// for its whole run, so concurrent callers on the same database queue behind
// each other and the later ones find nothing to do. Advisory locks are scoped
// to the current database, so migrating different shard databases of one
// server does not contend.
package migrations
