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

	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/sharding"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// cmdRemoveShardingData removes sharding's internal data of the entity types args
// names (each may list several, comma-separated) from the badger journal in -dir:
// sharding.RemoveInternalData, for a stopped cluster. It works on the journal's files,
// not through a management server.
func cmdRemoveShardingData(ctx context.Context, s *session, args []string) error {
	dir := s.sub.dir
	if dir == "" {
		return &usageError{"remove-sharding-data needs -dir, the badger journal's folder"}
	}
	if s.sub.shards < 0 {
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
	// badgerjournal.Open creates a missing database: a mistyped -dir must not become
	// an empty journal that "removes" nothing.
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return fmt.Errorf("no badger journal in %s: %w", dir, err)
	}
	store, err := badgerjournal.Open(badgerjournal.Options{Dir: dir, Logger: warnLogger(s.stderr)})
	if errors.Is(err, badgerjournal.ErrLocked) {
		return fmt.Errorf("the journal in %s is in use: stop every node of the cluster first (%w)", dir, err)
	}
	if err != nil {
		return fmt.Errorf("opening the journal in %s: %w", dir, err)
	}
	rep, err := sharding.RemoveInternalData(ctx, sharding.RemovalConfig{
		Journal:        store,
		Snapshots:      store,
		TypeNames:      types,
		NumberOfShards: s.sub.shards,
	})
	if cerr := store.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the journal: %w", cerr)
	}
	if err != nil {
		return err
	}
	return printRemoval(s.stdout, rep, s.opts.json)
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
