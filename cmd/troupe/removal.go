package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/persistence/pgjournal"
	"github.com/troupe-go/troupe/sharding"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// cmdRemoveShardingData removes sharding's internal data of the entity types args
// names (each may list several, comma-separated) from a stopped cluster's journal:
// the badger journal in -dir, or the PostgreSQL journal -postgres reaches
// (sharding.RemoveInternalData). It works on the journal, not through a management
// server.
func cmdRemoveShardingData(ctx context.Context, s *session, args []string) error {
	f := s.sub
	switch {
	case (f.dir == "") == (f.pg == ""):
		return &usageError{"remove-sharding-data needs the journal: -dir (badger) or -postgres (a connection string), not both"}
	case f.schema != "" && f.pg == "":
		return &usageError{"-schema goes with -postgres"}
	case f.shards < 0:
		return &usageError{"-shards must not be negative"}
	}
	var types []string
	for _, a := range args {
		for t := range strings.SplitSeq(a, ",") {
			if t = strings.TrimSpace(t); t != "" {
				types = append(types, t)
			}
		}
	}
	if len(types) == 0 {
		return &usageError{"remove-sharding-data needs at least one entity type"}
	}
	var store journalStore
	var err error
	if f.dir != "" {
		store, err = openBadger(f.dir, s.stderr)
	} else {
		store, err = openPostgres(ctx, f.pg, f.schema, s.stderr)
	}
	if err != nil {
		return err
	}
	rep, err := sharding.RemoveInternalData(ctx, sharding.RemovalConfig{
		Journal:        store,
		Snapshots:      store,
		TypeNames:      types,
		NumberOfShards: f.shards,
	})
	if cerr := store.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the journal: %w", cerr)
	}
	if err != nil {
		return err
	}
	return printRemoval(s.stdout, rep, s.opts.json)
}

// journalStore is a journal with its snapshot store, as both journals are.
type journalStore interface {
	persistence.Journal
	persistence.SnapshotStore
	Close() error
}

// openBadger opens the badger journal in dir, which must exist and be closed.
func openBadger(dir string, stderr io.Writer) (journalStore, error) {
	// badgerjournal.Open creates a missing database: a mistyped -dir must not become
	// an empty journal that "removes" nothing.
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return nil, fmt.Errorf("no badger journal in %s: %w", dir, err)
	}
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir, Logger: warnLogger(stderr)})
	if errors.Is(err, badgerjournal.ErrLocked) {
		return nil, fmt.Errorf("the journal in %s is in use: stop every node of the cluster first (%w)", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the journal in %s: %w", dir, err)
	}
	return store, nil
}

// openPostgres opens the PostgreSQL journal connString reaches, without migrating:
// a database without the journal's tables is an error, not a new empty journal. It
// refuses a journal that nodes still use: one with connections of another
// pgjournal store (application_name troupe-pgjournal) to the database.
func openPostgres(ctx context.Context, connString, schema string, stderr io.Writer) (journalStore, error) {
	if n, err := journalSessions(ctx, connString); err != nil {
		return nil, fmt.Errorf("reaching the PostgreSQL journal: %w", err)
	} else if n > 0 {
		return nil, fmt.Errorf("the PostgreSQL journal is in use (%d connections of troupe-pgjournal to the database): stop every node of the cluster first", n)
	}
	store, err := pgjournal.Open(ctx, pgjournal.Config{ConnString: connString, Schema: schema, ManualMigration: true,
		MaxConns: 2, WriteConcurrency: 1, Logger: warnLogger(stderr)})
	if errors.Is(err, pgjournal.ErrSchemaOutdated) {
		return nil, fmt.Errorf("no troupe journal in that database and schema: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the PostgreSQL journal: %w", err)
	}
	return store, nil
}

// journalSessions counts the other connections of pgjournal stores to the database
// connString names.
func journalSessions(ctx context.Context, connString string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, pgjournal.DefaultConnectTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'troupe-pgjournal' AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// removalView is remove-sharding-data's answer with -json.
type removalView struct {
	PersistenceIDs []string `json:"persistenceIds"`
}

// printRemoval prints what was removed: one line per history and a count, or, with
// asJSON, {"persistenceIds": [...]}.
func printRemoval(w io.Writer, rep sharding.RemovalReport, asJSON bool) error {
	if asJSON {
		v := removalView{PersistenceIDs: rep.PersistenceIDs}
		if v.PersistenceIDs == nil {
			v.PersistenceIDs = []string{}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	for _, pid := range rep.PersistenceIDs {
		fmt.Fprintln(w, "removed", pid)
	}
	_, err := fmt.Fprintf(w, "%d histories removed\n", len(rep.PersistenceIDs))
	return err
}

// warnLogger logs warnings and errors to w, as one line each.
func warnLogger(w io.Writer) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), zapcore.WarnLevel))
}
