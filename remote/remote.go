package remote

import (
	"container/list"
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
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/serialization"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Errors returned by the transport.
var (
	// ErrInvalidConfig is returned by Start for a Config that fails validation.
	ErrInvalidConfig = errors.New("remote: invalid config")
	// ErrAlreadyStarted is returned by a second Start for the same system.
	ErrAlreadyStarted = errors.New("remote: already started for this system")
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
	// recipient's system full (after waiting for room, with backpressure); the
	// message goes to dead letters.
	ErrOverloaded = errors.New("remote: outbound queue full")
	// ErrQuarantined is returned by a send to a system whose incarnation is
	// quarantined (it restarted, or was declared gone), and is the reason of the dead
	// letters of messages queued for it; the message goes to dead letters.
	ErrQuarantined = errors.New("remote: peer quarantined")
	// ErrUnreachable is the reason of the dead letters of messages queued for a
	// system that could not be connected to for Config.GiveUpAfter.
	ErrUnreachable = errors.New("remote: peer unreachable")
	// ErrRefusedSender is the reason of the dead letter of an inbound message whose
	// sender, or a ref inside it, names a system beyond Config.MaxUnverifiedPeers.
	ErrRefusedSender = errors.New("remote: message names too many unknown systems")
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
	// metrics holds the instruments recorded as events happen; nil while metrics are
	// off.
	metrics *remoteMetrics

	// Rate-limited logs, one per kind of event a stranger or a flood can repeat.
	dropLog     rateLog // inbound messages that cannot be decoded or delivered
	rejectLog   rateLog // refused and malformed inbound connections
	overloadLog rateLog // sends refused for a full queue
	connectLog  rateLog // failed dials and lost connections
	senderLog   rateLog // refused senders
	lossLog     rateLog // messages dropped from queues or lost in flight

	directAfter time.Duration // idleBeforeDirect; tests force or forbid direct writes

	dialSlots   chan struct{} // bounds dials to peers never reached
	verifySlots chan struct{} // bounds dials that check an inbound incarnation

	mu          sync.Mutex
	peers       map[actor.Address]*peer
	inbound     map[*inConn]struct{}
	pending     list.List // of *inConn: accepted, handshake not complete; oldest first
	accepted    int
	inState     map[uint64]*inboundState // system-lane receive state per peer uid
	readers     map[readerKey]*inConn    // the connection read for a peer incarnation's lane
	quarantined map[uint64]string        // peer uid -> reason
	verifying   map[actor.Address]*verification
	unverified  []*peer // peers known only from inbound refs and never reached; oldest first
	nUnverified int
	closed      bool

	managed       atomic.Pointer[func(actor.Address) bool] // see setMembership
	onQuarantined atomic.Pointer[func(actor.Address)]      // see quarantinedBy
	closing       atomic.Bool                              // close has begun

	ctx    context.Context // ends when the transport closes: bounds dials
	cancel context.CancelFunc

	done chan struct{}
	wg   sync.WaitGroup
}

// Concurrency bounds for dials that strangers can cause.
const (
	maxUnverifiedDials = 32
	maxVerifyDials     = 16
)

// Start enables remoting for sys: it listens on the configured address, installs
// itself as the system's transport (so Refs and paths of other systems resolve), and
// registers its shutdown with the system's coordinated shutdown (connections close
// after all actors have stopped, once what they sent last is written). A second Start
// for the same system fails with ErrAlreadyStarted.
func Start(sys *actor.System, cfg Config) (*Remote, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r, err := started.Start(sys, ErrAlreadyStarted, func() (*Remote, error) { return start(sys, cfg) })
	if err != nil {
		return nil, err
	}
	serialization.Attach(sys, cfg.Registry)
	r.startMetrics()
	r.wg.Add(2)
	go r.acceptLoop()
	go r.tickLoop()
	r.log.Info("remoting started", zap.Uint64("uid", r.uid))
	return r, nil
}

// start listens, installs the transport and registers its shutdown, for Start, which
// then keeps it as sys's and starts its goroutines.
func start(sys *actor.System, cfg Config) (*Remote, error) {
	ln, err := cfg.Listen("tcp", net.JoinHostPort(cfg.ListenHost, strconv.Itoa(cfg.ListenPort)))
	if err != nil {
		return nil, fmt.Errorf("remote: listen: %w", err)
	}
	host, port := cfg.AdvertisedHost, cfg.AdvertisedPort
	if host == "" {
		host = cfg.ListenHost
	}
	if port == 0 {
		if port, err = boundPort(ln.Addr()); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("%w: the listener's address %q has no port: set AdvertisedPort", ErrInvalidConfig, ln.Addr())
		}
	}
	r := &Remote{
		sys:         sys,
		cfg:         cfg,
		addr:        actor.Address{System: sys.Name(), Host: host, Port: port},
		uid:         randomUID(),
		ln:          ln,
		directAfter: idleBeforeDirect,
		dialSlots:   make(chan struct{}, maxUnverifiedDials),
		verifySlots: make(chan struct{}, maxVerifyDials),
		peers:       make(map[actor.Address]*peer),
		inbound:     make(map[*inConn]struct{}),
		inState:     make(map[uint64]*inboundState),
		readers:     make(map[readerKey]*inConn),
		quarantined: make(map[uint64]string),
		verifying:   make(map[actor.Address]*verification),
		done:        make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.self = r.addr.String()
	r.log = sys.Logger().With(zap.String("address", r.self))
	if r.host, err = actor.InstallTransport(sys, transport{r}); err != nil {
		_ = ln.Close()
		r.cancel()
		if errors.Is(err, actor.ErrInvalidConfig) {
			err = fmt.Errorf("%w: %w", ErrAlreadyStarted, err)
		}
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
		r.cancel()
		return nil, err
	}
	return r, nil
}

var started = actor.NewOncePerSystem[Remote]("troupe.remote")

// Get returns the transport Start installed in sys, or nil when remoting was not
// started.
func Get(sys *actor.System) *Remote { return started.Get(sys) }

// boundPort returns the port of a listener's address.
func boundPort(a net.Addr) (int, error) {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.Port, nil
	}
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}

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

// Send sends msg to the actor to with sender as its sender, as to.Send does, except
// that when to is an actor in another system whose outbound queue is full, Send waits
// for room until ctx ends, and then fails with an error wrapping ErrOverloaded and
// ctx's error (the message goes to dead letters). It is the way to apply
// backpressure with a deadline of the caller's choosing, whatever
// Config.BackpressureTimeout says; for an actor in this system it never blocks. With
// tracing on, the message carries the trace context of ctx (see
// actor.Ref.SendContext).
func (r *Remote) Send(ctx context.Context, to actor.Ref, msg any, sender actor.Ref) error {
	p, ok := r.host.Remote(to)
	if !ok || msg == nil {
		return to.SendContext(ctx, msg, sender)
	}
	rr, ok := p.(remoteRef)
	if !ok {
		return to.SendContext(ctx, msg, sender) // an absent local actor
	}
	live, err := rr.live()
	if err != nil {
		r.deadLetter(rr, msg, sender, err)
		return err
	}
	var sc *trace.SpanContext
	if r.sys.TracerProvider() != nil {
		sc = tracewire.Of(ctx)
	}
	return live.peer.user.sendUser(live, msg, sender, ctx, sc)
}

// transport is what the actor system sees of the Remote (actor.Transport).
type transport struct{ r *Remote }

func (t transport) Address() actor.Address { return t.r.addr }

// ResolveRemote returns a Ref to path (and uid, 0 for any incarnation) in the system
// at addr. It does not contact that system.
func (t transport) ResolveRemote(addr actor.Address, path string, uid uint64) (actor.Ref, error) {
	if !addr.HasHost() {
		return actor.Ref{}, fmt.Errorf("%w: %s has no host", actor.ErrNotFound, addr)
	}
	p, err := t.r.peerFor(addr)
	if err != nil {
		return actor.Ref{}, err
	}
	return newRemoteRef(p, path, uid).ref(), nil
}

// localResolver resolves the refs inside messages this system encoded itself (read
// back from a queue for dead letters): local actors, or Refs that send over the wire.
type localResolver struct{ r *Remote }

// ReceivingSystem implements wirebatch.ReceivingSystem: a batch of another package read
// back for dead letters decodes its messages with it, so that each dead letter names
// one of them.
func (l localResolver) ReceivingSystem() *actor.System { return l.r.sys }

func (l localResolver) ResolveRef(uri string) (actor.Ref, error) {
	addr, path, uid, err := actor.ParsePath(uri)
	if err != nil {
		return actor.Ref{}, err
	}
	if addr == l.r.addr {
		return l.r.localRef(path, uid), nil
	}
	return transport(l).ResolveRemote(addr, path, uid)
}

// localRef returns the local actor at path (and uid), or an absentRef naming it.
func (r *Remote) localRef(path string, uid uint64) actor.Ref {
	ref, err := r.sys.Resolve(localWire(path, uid))
	if err != nil {
		return absentRef{r: r, path: path, uid: uid}.ref()
	}
	return ref
}

// localWire is how a recipient is named to the system that hosts it: path#uid.
func localWire(path string, uid uint64) string {
	if uid == 0 {
		return path
	}
	return path + "#" + strconv.FormatUint(uid, 10)
}

// peerFor returns the peer for addr, creating it on first use (its writers start
// when something is sent).
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

// admitUnverified returns the peer for addr, a system named by a ref that arrived in
// a message. A new one counts against MaxUnverifiedPeers until it is reached; at the
// bound, the oldest one that has been idle (no lane running, no watches) for
// retireAfter is retired to make room, and when there is none the ref is refused.
func (r *Remote) admitUnverified(addr actor.Address) (*peer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.peers[addr]; ok {
		return p, nil
	}
	if r.closed {
		return nil, ErrClosed
	}
	if err := r.makeRoomLocked(); err != nil {
		return nil, err
	}
	p := newPeer(r, addr)
	r.peers[addr] = p
	r.addUnverifiedLocked(p)
	return p, nil
}

// retireAfter is how long an unverified peer must exist before it may be retired.
const retireAfter = 10 * time.Second

func (r *Remote) makeRoomLocked() error {
	if r.nUnverified < r.cfg.MaxUnverifiedPeers || r.retireIdleLocked(time.Now()) {
		return nil
	}
	return fmt.Errorf("%w: %d systems not yet reached", ErrRefusedSender, r.nUnverified)
}

func (r *Remote) addUnverifiedLocked(p *peer) {
	p.unverified = true
	p.admitted = time.Now()
	r.unverified = append(r.unverified, p)
	r.nUnverified++
}

// retireIdleLocked retires the oldest unverified peer idle since retireAfter before
// now, and reports whether there was one. Refs to a retired peer find their way back
// through revive.
func (r *Remote) retireIdleLocked(now time.Time) bool {
	live := r.unverified[:0]
	retired := false
	for _, p := range r.unverified {
		if !p.unverified {
			continue // reached or retired meanwhile
		}
		if !retired && now.Sub(p.admitted) >= retireAfter && p.idle() {
			retired = true
			p.unverified = false
			p.retired.Store(true)
			delete(r.peers, p.addr)
			r.nUnverified--
			continue
		}
		live = append(live, p)
	}
	clear(r.unverified[len(live):])
	r.unverified = live
	return retired
}

// revive returns the peer that stands for a retired peer's address: the one in the
// map, or the retired one itself, put back if MaxUnverifiedPeers allows.
func (r *Remote) revive(p *peer) (*peer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.peers[p.addr]; ok {
		return cur, nil
	}
	if r.closed || !p.retired.Load() {
		return p, nil
	}
	if err := r.makeRoomLocked(); err != nil {
		return nil, err
	}
	p.retired.Store(false)
	r.peers[p.addr] = p
	r.addUnverifiedLocked(p)
	return p, nil
}

// reached records that a handshake with p's address succeeded: it no longer counts
// as unverified.
func (r *Remote) reached(p *peer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.unverified {
		p.unverified = false
		r.nUnverified--
	}
}

// isQuarantined reports whether the peer incarnation uid is quarantined.
func (r *Remote) isQuarantined(uid uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, q := r.quarantined[uid]
	return q
}

// peerList returns the peers known now.
func (r *Remote) peerList() []*peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	peers := make([]*peer, 0, len(r.peers))
	for _, p := range r.peers {
		peers = append(peers, p)
	}
	return peers
}

// close stops the transport: new sends refused, what peers are owed delivered
// (flushPeers), then no new connections, queued frames written (bounded by ctx),
// connections closed, goroutines ended.
func (r *Remote) close(ctx context.Context) error {
	if !r.closing.CompareAndSwap(false, true) {
		return nil
	}
	r.flushPeers(ctx)
	// Death notices still waiting for a flush go now, while the lanes' writers can
	// still start; the lanes' last writes take them (see deathNotice for one held
	// meanwhile).
	for _, p := range r.peerList() {
		p.user.releaseNotices()
	}
	r.mu.Lock()
	r.closed = true
	conns := make([]*inConn, 0, len(r.inbound))
	for c := range r.inbound {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	close(r.done)
	r.cancel()
	err := r.ln.Close()
	for _, c := range conns {
		_ = c.conn.Close()
	}
	r.mu.Lock()
	for _, p := range r.peers {
		p.user.shutdownDeadline(time.Second)
		p.sys.shutdownDeadline(time.Second)
		p.user.wakeWaiters()
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
// detectors, resends unacknowledged system messages, and reports log lines held back.
func (r *Remote) tickLoop() {
	defer r.wg.Done()
	every := min(r.cfg.FailureDetector.HeartbeatInterval, r.cfg.SystemResendInterval, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case now := <-t.C:
			for _, p := range r.peerList() {
				p.tick(now)
			}
			for _, l := range []*rateLog{&r.dropLog, &r.rejectLog, &r.overloadLog, &r.connectLog, &r.senderLog, &r.lossLog} {
				l.flush(r.log, now)
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
// reason, and counts it.
func (r *Remote) deadLetter(rr remoteRef, msg any, sender actor.Ref, reason error) {
	r.stats.deadLetters.Add(1)
	rr.peer.stats.deadLetters.Add(1)
	r.host.DeadLetter(rr.ref(), msg, sender, reason)
}

// refuse is deadLetter for a message that cannot be sent at all, with a log line.
func (r *Remote) refuse(rr remoteRef, msg any, sender actor.Ref, err error) {
	r.dropLog.log(r.log, "message not sent", zap.String("recipient", rr.peer.self+rr.wire), zap.String("type", fmt.Sprintf("%T", msg)), zap.Error(err))
	r.deadLetter(rr, msg, sender, err)
}
