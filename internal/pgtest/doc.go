// Package pgtest is the PostgreSQL test harness shared by every package's
// tests.
//
// A package opts in from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Main starts one private server per test binary (internal/pgserver, unix
// socket only, in a temporary directory, with the password pgserver
// generates; the DSNs the harness returns carry it), or uses the server named by the
// HARVEST_TEST_DSN environment variable, which must allow CREATE DATABASE.
// It then builds a template database migrated with migrations.Apply. Each
// test takes its own database cloned from that template with NewDB or
// NewPool, so tests may run in parallel and commit freely; the database is
// dropped when the test ends.
//
// A binary whose TestMain does not call Main (the tests of a user of the
// public test kit, harvesttest) calls Lazy first instead: it sets the
// harness up on first use, and skips the test when no server binaries
// exist and HARVEST_TEST_DSN is not set.
//
// All functions are safe for concurrent use by parallel tests. Database
// creation and removal are serialised, because PostgreSQL refuses to clone a
// template that has other sessions.
package pgtest
