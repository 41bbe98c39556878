// Package pgserver starts and stops a private local PostgreSQL server from
// the PostgreSQL binaries installed on the machine (initdb and postgres).
//
// The test harness (internal/pgtest) runs one per test binary, and
// `harvestd dev` runs one under its data directory. Start initialises the
// data directory on first use and reuses it afterwards; Stop shuts the server
// down. The server runs as a child process in its own process group and is
// told to shut down if this process dies. When this process runs as root the
// server runs as Config.RunAsUser, because PostgreSQL refuses to run as root.
//
// The defaults trade durability for speed (fsync off): they are meant for
// tests and development, not production shards.
package pgserver
