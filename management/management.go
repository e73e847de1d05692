package management

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/singleton"
	"go.uber.org/zap"
)

// Management is the management HTTP server of one actor system. Start it with Start
// and find it with Get; it stops when the system shuts down (or with Stop). Its
// methods are safe for concurrent use.
type Management struct {
	sys   *actor.System
	cfg   Config // with defaults
	log   *zap.Logger
	ln    net.Listener
	srv   *http.Server
	hub   *hub
	ready *readiness
	// ref is the management actor, /system/management: it feeds the event streams and
	// answers the leave requests of other members' management servers.
	ref actor.Ref

	served   chan struct{} // closed when Serve has returned
	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{} // closed when Stop has finished
	watchers sync.WaitGroup
	watchMu  sync.Mutex
	watched  map[*singleton.Manager]bool
	ctx      context.Context // ends at Stop: the singleton watchers end with it
	cancel   context.CancelFunc
}

var started = actor.NewOncePerSystem[Management]("troupe.management")

// Get returns the management server started on sys, or nil before Start (or when
// Start failed). A server that has stopped is still returned.
func Get(sys *actor.System) *Management { return started.Get(sys) }

// Start starts the management server of sys: it listens on cfg.Address at once (so
// that a liveness probe answers while the member joins) and serves the routes the
// package documentation lists. Start it after cluster.Start, so that it follows the
// cluster's events from the beginning (without a cluster, the member routes answer
// 503 and /ready looks only at sharding and the singletons). It stops in the
// before-actor-system-terminate phase of the system's coordinated shutdown, after the
// member has left the cluster, so that probes see the member leave.
//
// Start returns an error wrapping ErrInvalidConfig for an invalid configuration,
// ErrAlreadyStarted when a server already runs in sys, and the listener's error when
// the address cannot be bound.
func Start(sys *actor.System, cfg Config) (*Management, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return started.Start(sys, ErrAlreadyStarted, func() (*Management, error) { return start(sys, cfg) })
}

// start starts a server for Start; it is kept as sys's when it returns no error.
func start(sys *actor.System, cfg Config) (*Management, error) {
	m := &Management{
		sys: sys, cfg: cfg, log: sys.Logger().With(zap.String("component", "management")),
		served: make(chan struct{}), stopped: make(chan struct{}),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.hub = newHub(cfg.MaxEventStreams, cfg.EventBuffer)
	m.ready = &readiness{}
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		m.cancel()
		return nil, fmt.Errorf("management: listening on %s: %w", cfg.Address, err)
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	m.ln = ln
	m.srv = &http.Server{
		Handler:           m.routes(),
		ReadTimeout:       cfg.ReadTimeout,
		ReadHeaderTimeout: cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          zap.NewStdLog(m.log),
	}
	ref, err := sys.SpawnSystem(actor.PropsOf(func() actor.Actor { return &managementActor{m: m} }), actorName)
	if err != nil {
		_ = ln.Close()
		m.cancel()
		return nil, fmt.Errorf("management: starting its actor: %w", err)
	}
	m.ref = ref
	if err := sys.CoordinatedShutdown().AddTask(actor.PhaseBeforeActorSystemTerminate, "management-stop", m.Stop); err != nil {
		_ = sys.Stop(ref)
		_ = ln.Close()
		m.cancel()
		return nil, fmt.Errorf("management: registering the shutdown task: %w", err)
	}
	if c := cluster.Get(sys); c != nil {
		if err := c.Subscribe(ref); err != nil {
			m.log.Warn("management: cannot follow the cluster's events; the event stream will miss them", zap.Error(err))
		}
	}
	go func() {
		defer close(m.served)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("management: the server stopped", zap.Error(err))
		}
	}()
	// A system that terminates without its coordinated shutdown's phases (they timed
	// out, say) still stops the server.
	go func() {
		select {
		case <-sys.Terminated():
			_ = m.Stop(context.Background())
		case <-m.stopped:
		}
	}()
	m.watchSingletons()
	m.log.Info("management server started", zap.String("address", m.URL()))
	return m, nil
}

// maxHeaderBytes bounds a request's headers.
const maxHeaderBytes = 16 << 10

// Addr returns the address the server listens on: with port 0 in Config.Address, the
// port it got.
func (m *Management) Addr() net.Addr { return m.ln.Addr() }

// URL returns the server's base URL: http://host:port, or https:// with TLS.
func (m *Management) URL() string {
	scheme := "http://"
	if m.cfg.TLS != nil {
		scheme = "https://"
	}
	return scheme + m.ln.Addr().String()
}

// Stats counts what the server's event streams did.
type Stats struct {
	// EventStreams is the number of event streams open now.
	EventStreams int
	// EventsDropped counts events not delivered to a stream whose client was too slow
	// (its buffer was full); each closed that stream.
	EventsDropped uint64
	// SlowStreamsClosed counts the streams closed because their client did not keep
	// up (a full buffer, or a write that did not finish within the WriteTimeout).
	SlowStreamsClosed uint64
	// StreamsRefused counts event streams refused because MaxEventStreams were open.
	StreamsRefused uint64
}

// Stats returns the server's counters.
func (m *Management) Stats() Stats { return m.hub.stats() }

// Stop stops the server: it closes every event stream, stops taking connections and
// waits until the requests in progress have ended (until ctx ends; then it closes
// their connections). It is idempotent; coordinated shutdown calls it.
func (m *Management) Stop(ctx context.Context) error {
	m.stopOnce.Do(func() {
		m.watchMu.Lock() // no watcher starts after this: watchSingletons checks ctx
		m.cancel()
		m.watchMu.Unlock()
		m.hub.shutdown()
		err := m.srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, m.srv.Close())
		}
		<-m.served
		m.watchers.Wait()
		_ = m.sys.Stop(m.ref)
		m.stopErr = err
		close(m.stopped)
		m.log.Info("management server stopped")
	})
	<-m.stopped
	return m.stopErr
}
