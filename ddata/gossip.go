package ddata

import (
	"hash/fnv"
	"maps"
	"slices"
)

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

// gossipStatus is what a node gossips each gossip interval to one random peer: the
// digests of one chunk of its keys. With more than maxElems keys, the keys are
// split into totChunks chunks by a hash of the key id, and successive ticks send
// successive chunks.
type gossipStatus struct {
	digests   map[string]Digest
	chunk     int
	totChunks int
}

// chunkOf returns the chunk of key among tot: the same on every node.
func chunkOf(key string, tot int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(tot))
}

// numChunks returns into how many chunks n keys are split.
func numChunks(n, maxElems int) int {
	return max(1, (n+maxElems-1)/maxElems)
}

// buildStatus returns the status to gossip on the tick-th gossip round, given the
// digests of all local keys (deleted keys carry deletedDigest).
func buildStatus(digests map[string]Digest, tick uint64, maxElems int) gossipStatus {
	tot := numChunks(len(digests), maxElems)
	st := gossipStatus{chunk: int(tick % uint64(tot)), totChunks: tot, digests: make(map[string]Digest)}
	for k, d := range digests {
		if tot == 1 || chunkOf(k, tot) == st.chunk {
			st.digests[k] = d
		}
	}
	return st
}

// gossipReply is what a node does with a peer's status.
type gossipReply struct {
	// send are the keys to send to the peer in full, sorted, at most maxElems:
	// those whose digests differ and those the peer lacks.
	send []string
	// sendBack asks the peer to answer with its own values of the keys sent,
	// because some of them differed (rather than being missing there).
	sendBack bool
	// request are the keys the peer has and this node lacks, sorted, at most
	// maxElems: answer with a status naming them with notFoundDigest.
	request []string
}

// compareStatus compares local digests (every local key) with a peer's status.
func compareStatus(local map[string]Digest, st gossipStatus, maxElems int) gossipReply {
	var r gossipReply
	tot := max(st.totChunks, 1)
	for k, d := range local {
		other, ok := st.digests[k]
		switch {
		case !ok && (tot == 1 || chunkOf(k, tot) == st.chunk):
			r.send = append(r.send, k) // missing at the peer
		case ok && other != d:
			r.send = append(r.send, k)
			if other != notFoundDigest {
				r.sendBack = true
			}
		}
	}
	for k, d := range st.digests {
		if _, ok := local[k]; !ok && d != notFoundDigest {
			r.request = append(r.request, k)
		}
	}
	slices.Sort(r.send)
	slices.Sort(r.request)
	r.send = r.send[:min(len(r.send), maxElems)]
	r.request = r.request[:min(len(r.request), maxElems)]
	return r
}

// requestStatus returns the status that asks a peer for keys.
func requestStatus(keys []string, st gossipStatus) gossipStatus {
	req := gossipStatus{chunk: st.chunk, totChunks: st.totChunks, digests: make(map[string]Digest, len(keys))}
	for _, k := range keys {
		req.digests[k] = notFoundDigest
	}
	return req
}

// sendBackKeys returns the keys of a received gossip whose merged local digest still
// differs from the sender's: the values to send back when it asked for them.
func sendBackKeys(received map[string]Digest, localAfterMerge map[string]Digest) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(received)) {
		if d, ok := localAfterMerge[k]; ok && d != received[k] {
			out = append(out, k)
		}
	}
	return out
}
