package remote

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/hooks"
	"go.uber.org/zap"
)

// Errors returned by the transport.
var (
	// ErrInvalidConfig is returned by Start for a Config that fails validation.
	ErrInvalidConfig = errors.New("remote: invalid config")
	// ErrHandshakeRejected reports a connection the other side refused.
	ErrHandshakeRejected = errors.New("remote: handshake rejected")
	// ErrUnregistered is returned by a send whose message type is not in the
	// registry; the message goes to dead letters.
	ErrUnregistered = errors.New("remote: message type not registered")
	// ErrFrameTooLarge is returned by a send whose message exceeds MaxFrameSize.
	ErrFrameTooLarge = errors.New("remote: message exceeds the maximum frame size")
	// ErrClosed is returned after the transport has shut down.
	ErrClosed = errors.New("remote: transport closed")
	// ErrOverloaded is returned by a send that finds the outbound queue to the
	// recipient's system full; the message goes to dead letters.
	ErrOverloaded = errors.New("remote: outbound queue full")
	// ErrQuarantined is returned by a send to a system whose incarnation is
	// quarantined (it restarted, or was declared gone); the message goes to dead
	// letters.
	ErrQuarantined = errors.New("remote: peer quarantined")
)

// Remote is the transport of one actor system: it listens for other systems, keeps a
// connection per lane to each peer, and stands behind Refs to actors elsewhere.
type Remote struct {
	sys   *actor.System
	host  *actor.TransportHost
	cfg   Config
	log   *zap.Logger
	addr  actor.Address
	self  string // addr.String(), as sent in handshakes
	uid   uint64
	ln    net.Listener
	stats counters

	dropLog   rateLog // inbound messages that cannot be decoded
	rejectLog rateLog // refused and malformed inbound connections

	mu          sync.Mutex
	peers       map[actor.Address]*peer
	inbound     map[*inConn]struct{}
	inState     map[uint64]*inboundState // system-lane receive state per peer uid
	quarantined map[uint64]string        // peer uid -> reason
	blocked     map[actor.Address]struct{}
	closed      bool

	managed atomic.Pointer[func(actor.Address) bool] // see SetMembership

	done chan struct{}
	wg   sync.WaitGroup
}

// Start enables remoting for sys: it listens on the configured address, installs
// itself as the system's provider (so Refs and paths of other systems resolve), and
// registers its shutdown with the system's coordinated shutdown (connections close
// after all actors have stopped, once what they sent last is written).
func Start(sys *actor.System, cfg Config) (*Remote, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.ListenHost, strconv.Itoa(cfg.ListenPort)))
	if err != nil {
		return nil, fmt.Errorf("remote: listen: %w", err)
	}
	host, port := cfg.AdvertisedHost, cfg.AdvertisedPort
	if host == "" {
		host = cfg.ListenHost
	}
	if port == 0 {
		port = ln.Addr().(*net.TCPAddr).Port
	}
	r := &Remote{
		sys:         sys,
		cfg:         cfg,
		addr:        actor.Address{System: sys.Name(), Host: host, Port: port},
		uid:         randomUID(),
		ln:          ln,
		peers:       make(map[actor.Address]*peer),
		inbound:     make(map[*inConn]struct{}),
		inState:     make(map[uint64]*inboundState),
		quarantined: make(map[uint64]string),
		blocked:     make(map[actor.Address]struct{}),
		done:        make(chan struct{}),
	}
	r.self = r.addr.String()
	r.log = sys.Logger().With(zap.String("address", r.self))
	if r.host, err = actor.InstallTransport(sys, r); err != nil {
		_ = ln.Close()
		return nil, err
	}
	err = sys.CoordinatedShutdown().AddTask(actor.PhaseActorSystemTerminate, "remote-close", func(ctx context.Context) error {
		select {
		case <-sys.Terminated():
		case <-ctx.Done():
		}
		return r.close(ctx)
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	hooks.SetRemote(sys, hookAdapter{r})
	extension.Get(sys).Store(r)
	r.wg.Add(2)
	go r.acceptLoop()
	go r.tickLoop()
	r.log.Info("remoting started", zap.Uint64("uid", r.uid))
	return r, nil
}

var extension = actor.NewExtensionID("troupe.remote", func(*actor.System) *atomic.Pointer[Remote] {
	return new(atomic.Pointer[Remote])
})

// Get returns the transport Start installed in sys, or nil when remoting was not
// started.
func Get(sys *actor.System) *Remote { return extension.Get(sys).Load() }

func randomUID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if u := binary.BigEndian.Uint64(b[:]); u != 0 {
			return u
		}
	}
}

// Address returns the address other systems reach this one at.
func (r *Remote) Address() actor.Address { return r.addr }

// UID returns this system's incarnation uid, fresh at every Start.
func (r *Remote) UID() uint64 { return r.uid }

// Stats returns the transport's counters.
func (r *Remote) Stats() Stats { return r.stats.snapshot() }

// ResolveRemote implements actor.Transport: a Ref to path (and uid, 0 for any
// incarnation) in the system at addr. It does not contact that system.
func (r *Remote) ResolveRemote(addr actor.Address, path string, uid uint64) (actor.Ref, error) {
	if !addr.HasHost() {
		return actor.Ref{}, fmt.Errorf("%w: %s has no host", actor.ErrNotFound, addr)
	}
	p, err := r.peerFor(addr)
	if err != nil {
		return actor.Ref{}, err
	}
	return newRemoteRef(p, path, uid).ref(), nil
}

// refFromURI turns a full actor path from the wire into a Ref: a local actor when the
// address is ours (dead letters when it is gone), a remote Ref otherwise.
func (r *Remote) refFromURI(uri string) (actor.Ref, error) {
	addr, path, uid, err := actor.ParsePath(uri)
	if err != nil {
		return actor.Ref{}, err
	}
	if addr == r.addr {
		ref, err := r.sys.Resolve(localWire(path, uid))
		if err != nil {
			return r.sys.DeadLetters(), nil
		}
		return ref, nil
	}
	return r.ResolveRemote(addr, path, uid)
}

// ResolveRef implements serialization.RefResolver: actor paths inside messages
// resolve to local actors (dead letters when gone) or to Refs that send over the wire.
func (r *Remote) ResolveRef(uri string) (actor.Ref, error) { return r.refFromURI(uri) }

// localWire is how a recipient is named to the system that hosts it: path#uid.
func localWire(path string, uid uint64) string {
	if uid == 0 {
		return path
	}
	return path + "#" + strconv.FormatUint(uid, 10)
}

// peerFor returns the peer for addr, creating it (and its writers) on first use.
func (r *Remote) peerFor(addr actor.Address) (*peer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.peers[addr]; ok {
		return p, nil
	}
	if r.closed {
		return nil, ErrClosed
	}
	p := newPeer(r, addr)
	r.peers[addr] = p
	return p, nil
}

// isQuarantined reports whether the peer incarnation uid is quarantined.
func (r *Remote) isQuarantined(uid uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, q := r.quarantined[uid]
	return q
}

// close stops the transport: no new connections, queued frames written (bounded by
// ctx), connections closed, goroutines ended.
func (r *Remote) close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	conns := make([]*inConn, 0, len(r.inbound))
	for c := range r.inbound {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	close(r.done)
	err := r.ln.Close()
	for _, c := range conns {
		_ = c.conn.Close()
	}
	r.mu.Lock()
	for _, p := range r.peers {
		p.user.shutdownDeadline(time.Second)
		p.sys.shutdownDeadline(time.Second)
	}
	r.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		return fmt.Errorf("remote: close: %w", ctx.Err())
	}
	r.log.Info("remoting stopped")
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// tickLoop sends heartbeats to peers with watched actors, checks their failure
// detectors, and resends unacknowledged system messages.
func (r *Remote) tickLoop() {
	defer r.wg.Done()
	every := min(r.cfg.FailureDetector.HeartbeatInterval, r.cfg.SystemResendInterval)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case now := <-t.C:
			r.mu.Lock()
			peers := make([]*peer, 0, len(r.peers))
			for _, p := range r.peers {
				peers = append(peers, p)
			}
			r.mu.Unlock()
			for _, p := range peers {
				p.tick(now)
			}
		}
	}
}

func (r *Remote) isClosed() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// deadLetter hands a message the transport cannot send to dead letters, with the
// reason.
func (r *Remote) deadLetter(rr remoteRef, msg any, sender actor.Ref, reason error) {
	r.stats.deadLetters.Add(1)
	r.host.DeadLetter(rr.ref(), msg, sender, reason)
}

// refuse is deadLetter for a message that cannot be sent at all, with a log line.
func (r *Remote) refuse(rr remoteRef, msg any, sender actor.Ref, err error) {
	r.log.Warn("message not sent", zap.String("recipient", rr.peer.self+rr.wire), zap.String("type", fmt.Sprintf("%T", msg)), zap.Error(err))
	r.deadLetter(rr, msg, sender, err)
}
