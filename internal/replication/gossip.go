package replication

import (
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
)

// UnreachableGossipEvery: every this many gossip rounds, the round goes to an
// unreachable member instead of a reachable one (when there is one).
const UnreachableGossipEvery = 3

// GossipTarget picks the peer of gossip round round: a random reachable member,
// except every third round, which goes to an unreachable one when there is one
// (the failure detector may call a member unreachable long after the network has
// healed; a message to a member really gone costs only a dead letter). It reports
// false when there is no member at all.
func GossipTarget[N any](reachable, unreachable []N, round uint64, rng *rand.Rand) (N, bool) {
	candidates := reachable
	if len(unreachable) > 0 && (len(reachable) == 0 || round%UnreachableGossipEvery == UnreachableGossipEvery-1) {
		candidates = unreachable
	}
	if len(candidates) == 0 {
		var zero N
		return zero, false
	}
	return candidates[rng.IntN(len(candidates))], true
}

// Status is what a node gossips each gossip interval to one peer: the digests of
// one chunk of its keys. With more than maxElems keys, the keys are split into
// TotChunks chunks by a hash of the key id (ChunkOf), and successive rounds send
// successive chunks.
type Status[D comparable] struct {
	Digests   map[string]D
	Chunk     int
	TotChunks int
}

// Valid reports whether the chunk numbers make sense (a status from the wire).
func (st Status[D]) Valid() bool {
	return st.TotChunks >= 1 && st.Chunk >= 0 && st.Chunk < st.TotChunks
}

// Holds reports whether key belongs to st's chunk.
func (st Status[D]) Holds(key string) bool {
	return st.TotChunks <= 1 || ChunkOf(key, st.TotChunks) == st.Chunk
}

// ChunkOf returns the chunk of key among tot: the same on every node.
func ChunkOf(key string, tot int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(tot))
}

// NumChunks returns into how many chunks n keys are split.
func NumChunks(n, maxElems int) int {
	return max(1, (n+maxElems-1)/maxElems)
}

// BuildStatus returns the status to gossip on the round-th gossip round, given the
// digests of all local keys (deleted keys carry a digest of their own).
func BuildStatus[D comparable](digests map[string]D, round uint64, maxElems int) Status[D] {
	tot := NumChunks(len(digests), maxElems)
	st := Status[D]{Chunk: int(round % uint64(tot)), TotChunks: tot, Digests: make(map[string]D)}
	for k, d := range digests {
		if st.Holds(k) {
			st.Digests[k] = d
		}
	}
	return st
}

// GossipReply is what a node does with a peer's status.
type GossipReply struct {
	// Send are the keys to send to the peer in full, sorted, at most maxElems:
	// those whose digests differ and those the peer lacks.
	Send []string
	// SendBack asks the peer to answer with its own values of the keys sent,
	// because some of them differed (rather than being missing there).
	SendBack bool
	// Request are the keys the peer has and this node lacks, sorted, at most
	// maxElems: answer with RequestStatus.
	Request []string
}

// CompareStatus compares local digests (every local key) with a peer's status.
// notFound is the digest that names a key its sender does not hold.
func CompareStatus[D comparable](local map[string]D, st Status[D], notFound D, maxElems int) GossipReply {
	var r GossipReply
	for k, d := range local {
		other, ok := st.Digests[k]
		switch {
		case !ok && st.Holds(k):
			r.Send = append(r.Send, k) // missing at the peer
		case ok && other != d:
			r.Send = append(r.Send, k)
			if other != notFound {
				r.SendBack = true
			}
		}
	}
	for k, d := range st.Digests {
		if _, ok := local[k]; !ok && d != notFound {
			r.Request = append(r.Request, k)
		}
	}
	slices.Sort(r.Send)
	slices.Sort(r.Request)
	r.Send = r.Send[:min(len(r.Send), maxElems)]
	r.Request = r.Request[:min(len(r.Request), maxElems)]
	return r
}

// RequestStatus returns the status that asks a peer for keys (CompareStatus's
// Request) after its status st: this node's own digests of st's chunk, so that the
// peer sends only what differs, and the keys asked for with notFound.
func RequestStatus[D comparable](local map[string]D, keys []string, st Status[D], notFound D) Status[D] {
	req := Status[D]{Chunk: st.Chunk, TotChunks: st.TotChunks, Digests: make(map[string]D)}
	for k, d := range local {
		if st.Holds(k) {
			req.Digests[k] = d
		}
	}
	for _, k := range keys {
		req.Digests[k] = notFound
	}
	return req
}

// SendBackKeys returns the keys of a received gossip whose merged local digest
// still differs from the sender's: the values to send back when it asked for them.
func SendBackKeys[D comparable](received map[string]D, localAfterMerge map[string]D) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(received)) {
		if d, ok := localAfterMerge[k]; ok && d != received[k] {
			out = append(out, k)
		}
	}
	return out
}
