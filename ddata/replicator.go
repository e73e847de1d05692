package ddata

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/ratelog"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// actorName is the replicator's name under /system: every node's replicator is at
// /system/ddataReplicator, where the others find it.
const actorName = "ddataReplicator"

// Replicator is a node's replicator: the actor that holds the node's replicas of
// the replicated values and exchanges them with the replicators of the other
// nodes. Start starts it; Get finds it. Use it through the package's functions
// (Read, Update, Delete, Subscribe, ... and their Send forms for actors).
type Replicator struct {
	sys     *actor.System
	ref     actor.Ref
	self    cluster.UniqueAddress
	cfg     Config
	reg     *serialization.Registry
	stats   counters
	gauges  gauges
	metrics *ddataMetrics // nil while metrics are off
	stopped chan struct{} // closed when the actor has stopped
}

var started = actor.NewOncePerSystem[Replicator]("ddata")

// Start starts the replicator of sys, at /system/ddataReplicator. Call it once per
// system, after cluster.Start (when replicating); a second call fails with
// ErrAlreadyStarted, an invalid cfg with an error wrapping ErrInvalidConfig. With
// durable keys it opens the durable store and loads every stored value before it
// returns, so the replicator serves nothing before they are in. That is the only
// part of Start that may take a while: when ctx ends before the store is open and
// read, Start closes the store and returns an error wrapping ctx's error (badger's
// open itself runs to its end). The replicator stops, and closes its store, when
// the system shuts down.
func Start(ctx context.Context, sys *actor.System, cfg Config) (*Replicator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return started.Start(sys, ErrAlreadyStarted, func() (*Replicator, error) { return start(ctx, sys, cfg) })
}

// start builds and spawns sys's replicator for Start, which keeps it.
func start(ctx context.Context, sys *actor.System, cfg Config) (*Replicator, error) {
	reg := cfg.Registry
	if reg == nil {
		reg = serialization.NewRegistry()
	}
	if err := registerAll(reg); err != nil {
		return nil, err
	}
	r := &Replicator{sys: sys, cfg: cfg, reg: reg, stopped: make(chan struct{})}
	r.startMetrics()
	if cfg.Cluster != nil {
		r.self = cfg.Cluster.SelfUniqueAddress()
		if cfg.Role != "" && !hasRole(cfg.Cluster.State(), r.self, cfg.Role) {
			return nil, fmt.Errorf("%w: this node does not have the role %q", ErrInvalidConfig, cfg.Role)
		}
	} else {
		r.self = cluster.UniqueAddress{Addr: sys.Address().String(), UID: randomUID()}
	}
	a := newReplicator(r)
	if len(cfg.DurableKeys) > 0 {
		store, loaded, err := openDurable(ctx, cfg.DurableDir, reg, sys.Logger())
		if err != nil {
			return nil, err
		}
		a.store = store
		a.loadDurable(loaded)
	}
	ref, err := sys.SpawnSystem(actor.PropsOf(func() actor.Actor { return a }), actorName)
	if err != nil {
		if a.store != nil {
			a.store.close()
		}
		return nil, err
	}
	r.ref = ref
	return r, nil
}

// Get returns the replicator Start started for sys, or nil before Start.
func Get(sys *actor.System) *Replicator { return started.Get(sys) }

// Ref returns the replicator actor's Ref.
func (r *Replicator) Ref() actor.Ref { return r.ref }

// SelfUniqueAddress returns the node this replicator writes as: the cluster
// member's identity (a random one without a cluster). Pass it to the CRDTs'
// operations in modify functions (counter.Increment(self, 1)).
func (r *Replicator) SelfUniqueAddress() cluster.UniqueAddress { return r.self }

// Registry returns the registry the replicator encodes values with.
func (r *Replicator) Registry() *serialization.Registry { return r.reg }

// FlushChanges makes the replicator notify subscribers of the changes it has not
// told yet now, instead of at the next notify interval.
func (r *Replicator) FlushChanges() error { return r.ref.Tell(flushRequest{}) }

// Stopped is closed once the replicator has stopped.
func (r *Replicator) Stopped() <-chan struct{} { return r.stopped }

// sendError is the error of a request that could not be sent.
func (r *Replicator) sendError(err error) error {
	select {
	case <-r.stopped:
		return fmt.Errorf("%w: %w", ErrStopped, err)
	default:
		return err
	}
}

// Stats counts what the replicator refused, dropped or could not do since Start.
// Every counter has a rate-limited log line next to it.
type Stats struct {
	// InvalidData counts values and deltas from other nodes that were refused:
	// unknown or undecodable types, broken data, a type other than the key's.
	// The rest of their message was used.
	InvalidData uint64
	// Ignored counts messages refused whole: from a node that is not a member,
	// or whose sender does not match the node it claims to be.
	Ignored uint64
	// SendFailures counts messages to other replicators that the transport
	// refused (queue full, too large, unregistered, peer gone).
	SendFailures uint64
	// TooLarge counts values too large for one message (MaxMessageSize); they
	// were sent alone and may have been refused by the transport.
	TooLarge uint64
	// StoreFailures counts failed writes of the durable store.
	StoreFailures uint64
	// LoadFailures counts stored values that could not be read at start.
	LoadFailures uint64
	// Panics counts messages whose handling panicked (a bug); the replicator
	// logged them and kept running.
	Panics uint64
}

type counters struct {
	invalidData, ignored, sendFailures, tooLarge atomic.Uint64
	storeFailures, loadFailures, panics          atomic.Uint64
}

// Stats returns the counters.
func (r *Replicator) Stats() Stats {
	c := &r.stats
	return Stats{
		InvalidData: c.invalidData.Load(), Ignored: c.ignored.Load(), SendFailures: c.sendFailures.Load(),
		TooLarge: c.tooLarge.Load(), StoreFailures: c.storeFailures.Load(), LoadFailures: c.loadFailures.Load(),
		Panics: c.panics.Load(),
	}
}

// hasRole reports whether the member self has the role in st.
func hasRole(st cluster.CurrentClusterState, self cluster.UniqueAddress, role string) bool {
	for _, m := range st.Members {
		if m.Unique == self {
			return m.HasRole(role)
		}
	}
	return false
}

// randomUID returns a random nonzero uid.
func randomUID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if u := binary.LittleEndian.Uint64(b[:]); u != 0 {
			return u
		}
	}
}

// rateLog bounds the log lines of one kind: at most lim.Burst per lim.Interval, then
// the count of those not logged with the next line.
type rateLog struct{ lim ratelog.Limiter }

// warn logs msg at warn level, rate-limited.
func (l *rateLog) warn(log *zap.Logger, msg string, fields ...zap.Field) {
	ok, suppressed := l.lim.Allow(time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		fields = append(fields, zap.Int("not_logged_before", suppressed))
	}
	log.Warn(msg, fields...)
}
