package remote

import (
	"sort"
	"sync/atomic"

	"github.com/troupe-go/troupe/actor"
)

// Stats are the transport's counters since Start.
type Stats struct {
	// MessagesOut and BytesOut count user and system messages written, with their
	// frame headers.
	MessagesOut, BytesOut uint64
	// MessagesIn and BytesIn count messages read.
	MessagesIn, BytesIn uint64
	// DeadLetters counts every message the transport could not send or deliver:
	// refused at the sender (unregistered, too large, queue full, peer quarantined),
	// dropped from the queue (quarantine, unreachable peer), lost with a broken
	// connection, or arriving for a missing actor, in an unknown type or from a
	// refused sender. The counters below single out some of them.
	DeadLetters uint64
	// Overloaded counts sends refused because the outbound queue was full.
	Overloaded uint64
	// Lost counts messages in a write that failed when their connection broke:
	// they may or may not have arrived (delivery is at most once).
	Lost uint64
	// RefusedSenders counts inbound messages dropped because their sender (or a ref
	// inside them) named a system beyond MaxUnverifiedPeers.
	RefusedSenders uint64
	// Reconnects counts outbound connections established after the first, per lane.
	Reconnects uint64
	// Quarantines counts peer incarnations quarantined.
	Quarantines uint64
	// Rejected counts inbound connections refused in the handshake, closed for a
	// malformed frame, or closed before their handshake to admit newer ones.
	Rejected uint64
	// Peers has the counters of each peer system, ordered by address.
	Peers []PeerStats
}

// PeerStats are the counters of one peer system.
type PeerStats struct {
	// Address is the peer's address.
	Address actor.Address
	// UID is the peer incarnation last handshaken with, 0 before the first.
	UID uint64
	// QueuedBytes is the size of the user messages queued for the peer and not yet
	// written.
	QueuedBytes int
	// DeadLetters, Overloaded, Lost and RefusedSenders are the transport's counters
	// (see Stats) for messages to the peer, or, for RefusedSenders, from it.
	DeadLetters, Overloaded, Lost, RefusedSenders uint64
}

type counters struct {
	msgsOut, bytesOut, msgsIn, bytesIn            atomic.Uint64
	deadLetters, overloaded, lost, refusedSenders atomic.Uint64
	reconnects, quarantines, rejected             atomic.Uint64
}

// peerCounters are a peer's share of the counters.
type peerCounters struct {
	deadLetters, overloaded, lost, refusedSenders atomic.Uint64
	msgsOut, bytesOut, msgsIn, bytesIn            atomic.Uint64 // counted only with metrics on
}

// Stats returns the transport's counters.
func (r *Remote) Stats() Stats {
	c := &r.stats
	s := Stats{
		MessagesOut: c.msgsOut.Load(), BytesOut: c.bytesOut.Load(),
		MessagesIn: c.msgsIn.Load(), BytesIn: c.bytesIn.Load(),
		DeadLetters: c.deadLetters.Load(), Overloaded: c.overloaded.Load(),
		Lost: c.lost.Load(), RefusedSenders: c.refusedSenders.Load(),
		Reconnects: c.reconnects.Load(), Quarantines: c.quarantines.Load(), Rejected: c.rejected.Load(),
	}
	for _, p := range r.peerList() {
		s.Peers = append(s.Peers, PeerStats{
			Address:        p.addr,
			UID:            p.currentUID(),
			QueuedBytes:    p.user.queuedBytes(),
			DeadLetters:    p.stats.deadLetters.Load(),
			Overloaded:     p.stats.overloaded.Load(),
			Lost:           p.stats.lost.Load(),
			RefusedSenders: p.stats.refusedSenders.Load(),
		})
	}
	sort.Slice(s.Peers, func(i, j int) bool { return s.Peers[i].Address.String() < s.Peers[j].Address.String() })
	return s
}
