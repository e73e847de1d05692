package ddata

import "github.com/troupe-go/troupe/internal/replication"

// Special digests of the gossip protocol.
var (
	// notFoundDigest names a key the sender does not hold: the peer answers
	// with its value.
	notFoundDigest = Digest{}
	// deletedDigest is the digest of a deleted key.
	deletedDigest = Digest{0: 0xff, 31: 0xff}
)

// defaultMaxDeltaElements bounds the keys in one gossip status or reply, and the
// entries of one delta propagation (Akka's max-delta-elements).
const defaultMaxDeltaElements = 500

// gossipStatus is the digests of one chunk of a node's keys: what gossip sends
// (see replication.Status).
type gossipStatus = replication.Status[Digest]
