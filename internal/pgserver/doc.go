// Package pgserver starts and stops a private local PostgreSQL server from
// the PostgreSQL binaries installed on the machine (initdb and postgres).
//
// The test harness (internal/pgtest) runs one per test binary, and
// `harvestd dev` runs one under its data directory. Start initialises the
// data directory on first use and reuses it afterwards; Stop shuts the server
// down. The server runs as a child process in its own process group and is
// told to shut down if this process dies. When this process runs as root the
// server runs as Config.RunAsUser, because PostgreSQL refuses to run as root.
// When that user cannot reach DataDir by its path (it lies under root's 0700
// home, say), the server gets the directory as an inherited open descriptor
// and names it /proc/self/fd/3; no directory's mode is changed.
//
// # Authentication
//
// Only the owner, this process's OS user, can connect. On first use Start
// writes a random password (32 bytes from crypto/rand, base64url) to
// DataDir/harvest-password (PasswordFileName), mode 0600, owned by this
// process's user: when it runs as root, the server's own user cannot read
// it either. Before every launch Start sets the superuser's password to it
// in single-user mode (PostgreSQL receives only the SCRAM verifier) and
// rewrites pg_hba.conf to demand scram-sha-256 on the unix socket,
// 127.0.0.1 and ::1, so a data directory initialised with trust
// authentication by an older Harvest is upgraded in place and keeps its
// data. The server listens on 127.0.0.1 only, and its default socket
// directory, DataDir/sock, is private (0700, inside the 0700 data
// directory). Server.DSN carries the password: treat it as a secret.
//
// The defaults trade durability for speed (fsync off): they are meant for
// tests and development, not production shards.
package pgserver
