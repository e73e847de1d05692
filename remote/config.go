package remote

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/troupe-go/troupe/serialization"
)

// Config configures remoting for one actor system. Zero fields mean their documented
// defaults; Registry is the only required field.
type Config struct {
	// ListenHost is the interface to listen on. Default "127.0.0.1".
	ListenHost string
	// ListenPort is the TCP port to listen on; 0 picks a free port.
	ListenPort int
	// AdvertisedHost and AdvertisedPort are the address other systems use to reach
	// this one, when it differs from the listen address (containers, NAT). Default:
	// the listen address (with the port actually bound).
	AdvertisedHost string
	AdvertisedPort int

	// Dial, when set, opens every connection this system makes to another, in place
	// of a net.Dialer: network is "tcp" and address the peer's advertised host:port.
	// It must honour ctx, which ends at HandshakeTimeout or when the transport closes.
	// TLS, when configured, runs over the connection it returns. It is the seam for
	// tunnels and proxies, and for fault injection in tests: testkit/faultnet wraps it
	// to cut, black-hole or slow a link. A connection with a SyscallConn method (as
	// *net.TCPConn has) is written to directly through its RawConn when the socket
	// takes the bytes at once, without a hand-over to the lane's writer goroutine;
	// its Write is used otherwise. Default: net.Dialer's DialContext.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Listen, when set, opens the listener that accepts other systems' connections, in
	// place of net.Listen: network is "tcp" and address ListenHost:ListenPort. The
	// transport closes the listener when it shuts down. When AdvertisedPort is zero,
	// the listener's address must carry the port (a *net.TCPAddr, or "host:port").
	// Like Dial, it is a seam for tests (testkit/faultnet) and special networks.
	// Default net.Listen.
	Listen func(network, address string) (net.Listener, error)

	// Registry names the message types that may cross the wire (shared with
	// persistence). Required.
	Registry *serialization.Registry

	// TLS, when set, is used for both accepted and dialled connections. For mutual
	// TLS set ClientAuth to tls.RequireAndVerifyClientCert and give both
	// Certificates and the CAs (RootCAs, ClientCAs).
	TLS *tls.Config
	// Secret, when set, must be known to both sides: each proves it in the handshake
	// (HMAC over the other's nonce) before any message is read.
	Secret []byte

	// MaxFrameSize bounds one frame (one message with its header). A larger message
	// is refused at the sender; a larger frame arriving closes the connection.
	// Default 256 KiB.
	MaxFrameSize int
	// OutboundQueueBytes bounds, in bytes of encoded frames, the user messages queued
	// for one peer and not yet written (including a write in progress). A send that
	// finds it full fails with ErrOverloaded (see BackpressureTimeout), and the message
	// goes to dead letters. Default 8 MiB; at least MaxFrameSize.
	OutboundQueueBytes int
	// BackpressureTimeout, when positive, makes a send that finds the outbound queue
	// full wait up to this long for room, as Erlang's busy distribution port does,
	// before it fails with ErrOverloaded. The sending goroutine (an actor's Receive)
	// blocks meanwhile. Zero, the default, fails at once. Remote.Send waits on a
	// context instead.
	BackpressureTimeout time.Duration
	// GiveUpAfter is how long a lane may fail to connect to a peer before the user
	// messages queued for it go to dead letters (ErrUnreachable) and the lane stops
	// dialling until something new is sent; system messages for a peer never reached
	// are dropped the same way. Default 60s.
	GiveUpAfter time.Duration
	// SystemBufferSize bounds the system messages sent to one peer and not yet
	// acknowledged; overflowing it quarantines the peer. Default 20,000.
	SystemBufferSize int
	// SystemResendInterval is how long an unacknowledged system message waits
	// before it is sent again. Default 1s.
	SystemResendInterval time.Duration
	// DeathNoticeFlushTimeout bounds how long the notice that a local actor stopped
	// waits, before it goes to a watcher at a peer, for the user messages sent to that
	// peer before it (by the actor among others) to be delivered there: with the wait,
	// a remote watcher receives what the actor sent it ahead of Terminated. The notice
	// goes without the confirmation after the timeout (a connection that fails, a peer
	// that is slow to read), checked once a second. Default 3s, as Akka's
	// death-watch-notification-flush-timeout; negative sends notices at once, which
	// gives up that order.
	DeathNoticeFlushTimeout time.Duration
	// ShutdownFlushTimeout bounds how long the transport, when its system shuts down,
	// waits for what it sent to peers to be delivered: user messages handed to their
	// recipients (a flush behind them is acknowledged), death notices released by
	// their flush, system messages acknowledged. It is what lets
	// a remote watcher hear at once that the actors of a system shut down gracefully
	// have stopped, and the last messages they sent, instead of a failure detector
	// giving the system up seconds later. Peers that cannot be reached (their last
	// connection attempt failed) or are quarantined are not waited for. Default 1s,
	// as Akka's shutdown-flush-timeout; negative closes at once.
	ShutdownFlushTimeout time.Duration

	// WriteTimeout bounds one write to a peer: a peer that takes nothing for this long
	// (stuck, or too slow to matter) loses its connection, which is then re-dialled.
	// Default 10s; negative disables it.
	WriteTimeout time.Duration

	// HandshakeTimeout bounds dialling plus the handshake; an accepted connection
	// that has not completed its handshake by then is closed. Default 5s.
	HandshakeTimeout time.Duration
	// MaxPendingConnections bounds the accepted connections that have not completed
	// their handshake. Each costs a goroutine and a few KiB until then; when one more
	// arrives, the oldest is closed. Default 256.
	MaxPendingConnections int
	// MaxUnverifiedPeers bounds the systems this one knows only from actor refs that
	// arrived in messages (a forwarded sender, a ref inside a message) and has not yet
	// reached. A message naming one more, when none of those is idle, goes to dead
	// letters and is counted (Stats.RefusedSenders). Default 256.
	MaxUnverifiedPeers int
	// ReconnectBackoffMin and ReconnectBackoffMax bound the wait between attempts to
	// reconnect to a peer; the wait doubles after each failure, and ends at once when
	// the peer connects to this system. Defaults 100ms, and 1s or the minimum when that
	// is longer (Akka's Artery restarts its outbound streams after 1s): a longer wait
	// delays, by as much, a cluster's view of a member it can reach again after a
	// partition heals.
	ReconnectBackoffMin time.Duration
	ReconnectBackoffMax time.Duration

	// FailureDetector configures the heartbeats towards systems with watched actors.
	FailureDetector FailureDetectorConfig
}

// FailureDetectorConfig configures the phi-accrual failure detector behind remote
// death watch. The defaults are Akka's for remote watch.
type FailureDetectorConfig struct {
	// HeartbeatInterval is how often a watched system is asked for a heartbeat.
	// Default 1s.
	HeartbeatInterval time.Duration
	// Threshold is the suspicion level (phi) above which a system is considered
	// gone. Default 10.
	Threshold float64
	// AcceptablePause is how long heartbeats may be missing (a GC pause, a busy
	// network) before suspicion rises. Default 10s.
	AcceptablePause time.Duration
	// MinStdDeviation keeps the detector from being too sharp when heartbeats arrive
	// with little jitter. Default 100ms.
	MinStdDeviation time.Duration
	// MaxSamples is how many intervals the detector remembers. Default 200.
	MaxSamples int
}

// defaultMaxFrameSize is MaxFrameSize's default.
const defaultMaxFrameSize = 256 << 10

func (c Config) withDefaults() Config {
	if c.Dial == nil {
		var d net.Dialer
		c.Dial = d.DialContext
	}
	if c.Listen == nil {
		c.Listen = net.Listen
	}
	if c.ListenHost == "" {
		c.ListenHost = "127.0.0.1"
	}
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = defaultMaxFrameSize
	}
	if c.OutboundQueueBytes == 0 {
		c.OutboundQueueBytes = 8 << 20
	}
	if c.GiveUpAfter == 0 {
		c.GiveUpAfter = time.Minute
	}
	if c.MaxPendingConnections == 0 {
		c.MaxPendingConnections = 256
	}
	if c.MaxUnverifiedPeers == 0 {
		c.MaxUnverifiedPeers = 256
	}
	if c.SystemBufferSize == 0 {
		c.SystemBufferSize = 20_000
	}
	if c.SystemResendInterval == 0 {
		c.SystemResendInterval = time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.DeathNoticeFlushTimeout == 0 {
		c.DeathNoticeFlushTimeout = 3 * time.Second
	}
	if c.ShutdownFlushTimeout == 0 {
		c.ShutdownFlushTimeout = time.Second
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
	if c.ReconnectBackoffMin == 0 {
		c.ReconnectBackoffMin = 100 * time.Millisecond
	}
	if c.ReconnectBackoffMax == 0 {
		c.ReconnectBackoffMax = max(time.Second, c.ReconnectBackoffMin)
	}
	fd := &c.FailureDetector
	if fd.HeartbeatInterval == 0 {
		fd.HeartbeatInterval = time.Second
	}
	if fd.Threshold == 0 {
		fd.Threshold = 10
	}
	if fd.AcceptablePause == 0 {
		fd.AcceptablePause = 10 * time.Second
	}
	if fd.MinStdDeviation == 0 {
		fd.MinStdDeviation = 100 * time.Millisecond
	}
	if fd.MaxSamples == 0 {
		fd.MaxSamples = 200
	}
	return c
}

// Validate reports the first missing or out-of-range field, as an error wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	fd := c.FailureDetector
	frame := c.MaxFrameSize
	if frame == 0 {
		frame = defaultMaxFrameSize
	}
	switch {
	case c.Registry == nil:
		return bad("Registry is required")
	case c.ListenPort < 0 || c.ListenPort > 65535:
		return bad("ListenPort %d", c.ListenPort)
	case c.AdvertisedPort < 0 || c.AdvertisedPort > 65535:
		return bad("AdvertisedPort %d", c.AdvertisedPort)
	case c.ListenHost != "" && net.ParseIP(c.ListenHost) == nil && !validHostName(c.ListenHost):
		return bad("ListenHost %q", c.ListenHost)
	case c.AdvertisedHost != "" && net.ParseIP(c.AdvertisedHost) == nil && !validHostName(c.AdvertisedHost):
		return bad("AdvertisedHost %q", c.AdvertisedHost)
	case c.MaxFrameSize < 0 || c.MaxFrameSize > 64<<20:
		return bad("MaxFrameSize %d (at most 64 MiB)", c.MaxFrameSize)
	case c.MaxFrameSize > 0 && c.MaxFrameSize < 1024:
		return bad("MaxFrameSize %d (at least 1 KiB)", c.MaxFrameSize)
	case c.OutboundQueueBytes < 0, c.SystemBufferSize < 0, c.MaxPendingConnections < 0, c.MaxUnverifiedPeers < 0:
		return bad("negative size")
	case c.OutboundQueueBytes > 0 && c.OutboundQueueBytes < frame:
		return bad("OutboundQueueBytes %d below MaxFrameSize %d", c.OutboundQueueBytes, frame)
	case c.SystemResendInterval < 0, c.HandshakeTimeout < 0, c.ReconnectBackoffMin < 0, c.ReconnectBackoffMax < 0,
		c.BackpressureTimeout < 0, c.GiveUpAfter < 0:
		return bad("negative duration")
	case c.ReconnectBackoffMax != 0 && c.ReconnectBackoffMin > c.ReconnectBackoffMax:
		return bad("ReconnectBackoffMin %v above ReconnectBackoffMax %v", c.ReconnectBackoffMin, c.ReconnectBackoffMax)
	case fd.HeartbeatInterval < 0, fd.AcceptablePause < 0, fd.MinStdDeviation < 0, fd.Threshold < 0, fd.MaxSamples < 0:
		return bad("negative failure-detector setting")
	}
	return nil
}

func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
