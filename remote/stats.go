package remote

import "sync/atomic"

// Stats are the transport's counters since Start.
type Stats struct {
	// MessagesOut and BytesOut count user and system messages written, with their
	// frame headers.
	MessagesOut, BytesOut uint64
	// MessagesIn and BytesIn count messages read.
	MessagesIn, BytesIn uint64
	// DeadLetters counts messages the transport could not send or deliver: refused
	// (unregistered, too large, queue full, peer quarantined), lost with a broken
	// connection, or arriving for a missing actor or in an unknown type.
	DeadLetters uint64
	// Reconnects counts outbound connections established after the first, per lane.
	Reconnects uint64
	// Quarantines counts peer incarnations quarantined.
	Quarantines uint64
	// Rejected counts inbound connections refused in the handshake or closed for a
	// malformed frame.
	Rejected uint64
}

type counters struct {
	msgsOut, bytesOut, msgsIn, bytesIn             atomic.Uint64
	deadLetters, reconnects, quarantines, rejected atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		MessagesOut: c.msgsOut.Load(), BytesOut: c.bytesOut.Load(),
		MessagesIn: c.msgsIn.Load(), BytesIn: c.bytesIn.Load(),
		DeadLetters: c.deadLetters.Load(), Reconnects: c.reconnects.Load(),
		Quarantines: c.quarantines.Load(), Rejected: c.rejected.Load(),
	}
}
