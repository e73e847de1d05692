package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Environment variables read by Acquire and Main.
const (
	// EnvConnString names a PostgreSQL server to test against, as a
	// connection string. When it is set no throwaway server is started.
	EnvConnString = "TROUPE_TEST_POSTGRES"

	// EnvRequire, set to 1, turns "no PostgreSQL, skipping" into a
	// failure, so that CI cannot pass without running the tests.
	EnvRequire = "TROUPE_REQUIRE_POSTGRES"
)

// Target is the PostgreSQL server a test package runs against.
type Target struct {
	// ConnString reaches the server.
	ConnString string
	// Server is the throwaway server, or nil when EnvConnString named an
	// outside one (tests that stop the server need their own then).
	Server *Server
}

// Acquire returns the server named by EnvConnString, or starts a throwaway
// one, and a function that stops it. It fails with ErrNoPostgres when
// EnvConnString is unset and no binaries exist.
func Acquire(ctx context.Context, opts Options) (Target, func(), error) {
	if cs := os.Getenv(EnvConnString); cs != "" {
		return Target{ConnString: cs}, func() {}, nil
	}
	srv, err := Start(ctx, opts)
	if err != nil {
		return Target{}, nil, err
	}
	return Target{ConnString: srv.ConnString, Server: srv}, func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}, nil
}

// Required reports whether EnvRequire asks for the PostgreSQL tests to run.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Main is the body of a TestMain: it acquires a server for the whole
// package, sets *target, runs the tests and stops the server, even when
// tests fail, and returns the exit code. Without PostgreSQL it prints a loud
// message and returns 0 without running the tests, or 1 when Required.
func Main(m interface{ Run() int }, target *Target) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t, release, err := Acquire(ctx, Options{})
	cancel()
	if errors.Is(err, ErrNoPostgres) {
		if Required() {
			fmt.Fprintf(os.Stderr, "FAIL: %v, and %s=1 requires the PostgreSQL tests: install PostgreSQL (apt-get install postgresql) or set %s\n", err, EnvRequire, EnvConnString)
			return 1
		}
		fmt.Fprintf(os.Stderr, "\n*** SKIP: the PostgreSQL tests did NOT run: %v.\n*** Install PostgreSQL (apt-get install postgresql) or set %s to a connection string.\n\n", err, EnvConnString)
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: starting PostgreSQL for the tests:", err)
		return 1
	}
	*target = t
	defer release()
	return m.Run()
}
