// Package pgtest gives tests a PostgreSQL server: the one named by the
// TROUPE_TEST_POSTGRES connection string, or else a throwaway server started
// from the PostgreSQL binaries found on the machine (in PATH or
// /usr/lib/postgresql/*/bin).
//
// A throwaway server is a data folder made by initdb in a temporary folder
// and a postgres process on 127.0.0.1 at a free port, with its Unix socket
// in that folder; Close stops it and deletes the folder. PostgreSQL refuses
// to run as root, so when the tests run as root initdb and postgres run as
// the postgres user, which owns the folder. The server runs with fsync off
// unless Options.Fsync, to keep tests fast; it also dies with the test
// process (a parent-death signal), so a crashed test leaves no server
// behind.
//
// Main starts one server per test package from TestMain. Without
// PostgreSQL it skips the package loudly, or fails it when
// TROUPE_REQUIRE_POSTGRES=1, as CI sets. Halt and Resume stop and restart a
// throwaway server on the same port and data, for tests of connection loss.
package pgtest
