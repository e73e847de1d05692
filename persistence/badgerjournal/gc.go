package badgerjournal

import (
	"errors"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// valueLogGC runs badger's value-log garbage collection periodically, so
// that the space of deleted and overwritten values stored in the value log
// (values of at least 1 MiB: large events and snapshots) is reclaimed.
type valueLogGC struct {
	db       *badger.DB
	log      *zap.Logger
	interval time.Duration
	ratio    float64

	stop chan struct{}
	done sync.WaitGroup
}

func startValueLogGC(db *badger.DB, log *zap.Logger, interval time.Duration, ratio float64) *valueLogGC {
	g := &valueLogGC{db: db, log: log, interval: interval, ratio: ratio, stop: make(chan struct{})}
	g.done.Add(1)
	go g.run()
	return g
}

func (g *valueLogGC) run() {
	defer g.done.Done()
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		g.round()
	}
}

// round rewrites value-log files while badger finds one worth rewriting,
// or until the store closes.
func (g *valueLogGC) round() {
	for {
		select {
		case <-g.stop:
			return
		default:
		}
		err := g.db.RunValueLogGC(g.ratio)
		switch {
		case err == nil:
			continue // a file was rewritten; there may be more
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return
		default:
			g.log.Warn("value log garbage collection failed", zap.Error(err))
			return
		}
	}
}

// close stops the collection and waits for a round in progress.
func (g *valueLogGC) close() {
	close(g.stop)
	g.done.Wait()
}
