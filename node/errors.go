package node

import "errors"

// Sentinel errors of the node.
var (
	// ErrDataDir reports a data directory the node cannot use (not a
	// directory, not writable, an unreadable or malformed node id file).
	ErrDataDir = errors.New("data dir not usable")
	// ErrNoPostgresBinaries reports that the managed PostgreSQL server
	// cannot start: initdb or postgres is not in Config.PGBinDir, or, with
	// PGBinDir unset, neither on PATH nor in /usr/lib/postgresql/*/bin.
	ErrNoPostgresBinaries = errors.New("no PostgreSQL binaries: install PostgreSQL (e.g. apt-get install postgresql), " +
		"set node.Config.PGBinDir (harvestd --pg-bin-dir) to the directory holding initdb and postgres, " +
		"or use an existing server (node.Config.PostgresDSN, harvestd --postgres)")
	// ErrCatalogBehind: this node's replica of the raft catalog lacks
	// something and is not known to be current, so it may exist.
	ErrCatalogBehind = errors.New("catalog may trail the leader's")
	// errNoAPIAddr: a member gossips no API address, so no certificate of
	// it can be checked (with TLS it stays untrusted).
	errNoAPIAddr = errors.New("member has no API address")
)
