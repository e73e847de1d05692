// Package rollingtest holds the process tests of a graceful shutdown on SIGTERM and of
// a rolling restart: three node processes of a sharded, persistent service on
// PostgreSQL, under a steady load of asks from a fourth member, are stopped by signal
// and restarted one after the other, and no ask may fail. The package has no code of
// its own; its test binary is also the node program (see node_test.go).
package rollingtest
