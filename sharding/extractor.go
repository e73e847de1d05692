package sharding

import (
	"strconv"
)

// Extractor places messages: it says which entity a message is for and what that
// entity receives, and which shard an entity belongs to. Every node of the cluster must
// use the same extractor for an entity type, and ShardID must never change for an ID
// while the cluster runs (otherwise an entity could run in two shards at once).
//
// A region handles Envelope and StartEntity itself (their entity ID is in the message)
// and asks the extractor only for their shard; every other message goes through
// Extract. An extractor is called from the region's goroutine and must not block. A
// panic in it is recovered: the message goes to dead letters, as one it cannot place.
type Extractor interface {
	// Extract returns the entity msg is for and the message that entity receives (msg
	// itself, or what it wraps). An empty ID means the message cannot be placed: it
	// goes to dead letters, with a log line.
	Extract(msg any) (EntityID, any)
	// ShardID returns the shard of an entity. An empty ShardID means the entity cannot
	// be placed.
	ShardID(id EntityID) ShardID
}

// Envelope carries a message to the entity named EntityID; the entity receives Message.
// Every region understands it, whatever its extractor, and typed entity references
// (EntityRefFor) send it. Send it to a region or proxy of this node: a region forwards
// the Message itself to other nodes (so Message's type must be registered with the
// serialization registry), never the Envelope.
type Envelope struct {
	EntityID EntityID
	Message  any
}

// EnvelopeExtractor is the extractor for entity types reached only through Envelope
// (and typed entity references): it places entities in NumberOfShards shards by a hash
// of the ID (HashShardID). It is the default when EntityConfig.Extractor is nil, with
// EntityConfig's NumberOfShards.
type EnvelopeExtractor struct {
	// NumberOfShards is the number of shards; at least 1. As a rule of thumb, ten
	// times the largest number of nodes the cluster will have.
	NumberOfShards int

	// Shards is the former name of NumberOfShards, read when NumberOfShards is 0.
	//
	// Deprecated: use NumberOfShards.
	Shards int
}

// Extract places Envelopes (EntityID and Message); every other message gets the empty
// ID and cannot be placed.
func (e EnvelopeExtractor) Extract(msg any) (EntityID, any) {
	switch m := msg.(type) {
	case Envelope:
		return m.EntityID, m.Message
	case *Envelope:
		if m != nil {
			return m.EntityID, m.Message
		}
	}
	return "", nil
}

// ShardID returns HashShardID(id, e.NumberOfShards).
func (e EnvelopeExtractor) ShardID(id EntityID) ShardID {
	n := e.NumberOfShards
	if n == 0 {
		n = e.Shards
	}
	return HashShardID(id, n)
}

// HashShardID returns the shard of id among n shards: the 32-bit FNV-1a hash of the ID's
// bytes modulo n, in decimal ("0" to n-1). It is the same on every node and in every
// version of Troupe. It returns "" for an empty ID, and "0" when n < 1.
func HashShardID(id EntityID, n int) ShardID {
	if id == "" {
		return ""
	}
	if n < 1 {
		return "0"
	}
	// FNV-1a inline, over the string itself: hash.Hash32 and the []byte conversion
	// cost an allocation each on every message.
	h := uint32(fnvOffset32)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= fnvPrime32
	}
	shard := uint64(h) % uint64(n)
	if shard < uint64(len(shardNames)) {
		return shardNames[shard]
	}
	return ShardID(strconv.FormatUint(shard, 10))
}

// FNV-1a's 32-bit parameters (hash/fnv's).
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// shardNames holds the decimal names of the first shards, so that placing a message
// allocates no name (the default is 1,000 shards).
var shardNames = func() []ShardID {
	out := make([]ShardID, 4096)
	for i := range out {
		out[i] = ShardID(strconv.Itoa(i))
	}
	return out
}()

// ExtractorFuncs builds an Extractor from two functions, for message types that carry
// their entity ID themselves (as the seed's Get{CounterID} does).
type ExtractorFuncs struct {
	// Entity returns the entity a message is for and the message it receives; "" when
	// it cannot place it. Required.
	Entity func(msg any) (EntityID, any)
	// Shard returns an entity's shard. Nil means HashShardID over NumberOfShards.
	Shard func(id EntityID) ShardID
	// NumberOfShards is used when Shard is nil; at least 1.
	NumberOfShards int
}

// Extract calls Entity (the empty ID when Entity is nil).
func (f ExtractorFuncs) Extract(msg any) (EntityID, any) {
	if f.Entity == nil {
		return "", nil
	}
	return f.Entity(msg)
}

// ShardID calls Shard, or HashShardID with NumberOfShards.
func (f ExtractorFuncs) ShardID(id EntityID) ShardID {
	if f.Shard == nil {
		return HashShardID(id, f.NumberOfShards)
	}
	return f.Shard(id)
}
