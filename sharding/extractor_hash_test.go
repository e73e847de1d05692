package sharding

import (
	"hash/fnv"
	"strconv"
	"testing"
)

// HashShardID is FNV-1a (hash/fnv's) modulo n, in decimal, for any ID and any n; the
// inline hash and the table of names change nothing.
func TestHashShardIDIsFNV1a(t *testing.T) {
	ids := []EntityID{"a", "42", "counter-7", "ünïcödé", "a/b c", EntityID(make([]byte, 300))}
	for i := range 2000 {
		ids = append(ids, EntityID("entity-"+strconv.Itoa(i*7919)))
	}
	for _, n := range []int{1, 3, 10, 1000, 4095, 4096, 4097, 100_000} {
		for _, id := range ids {
			h := fnv.New32a()
			_, _ = h.Write([]byte(id))
			want := ShardID(strconv.FormatUint(uint64(h.Sum32())%uint64(n), 10))
			if got := HashShardID(id, n); got != want {
				t.Fatalf("HashShardID(%q, %d) = %q, want %q", id, n, got, want)
			}
		}
	}
	if testing.AllocsPerRun(100, func() { _ = HashShardID("counter-7", 1000) }) != 0 {
		t.Fatal("HashShardID allocates")
	}
}

// EnvelopeExtractor's deprecated Shards counts only when NumberOfShards is 0.
func TestEnvelopeExtractorShardCount(t *testing.T) {
	for _, id := range []EntityID{"a", "b", "counter-17", "x"} {
		want := HashShardID(id, 7)
		if got := (EnvelopeExtractor{NumberOfShards: 7}).ShardID(id); got != want {
			t.Errorf("NumberOfShards 7: %q in %q, want %q", id, got, want)
		}
		if got := (EnvelopeExtractor{Shards: 7}).ShardID(id); got != want {
			t.Errorf("Shards 7: %q in %q, want %q", id, got, want)
		}
		if got := (EnvelopeExtractor{NumberOfShards: 7, Shards: 3}).ShardID(id); got != want {
			t.Errorf("NumberOfShards 7, Shards 3: %q in %q, want %q", id, got, want)
		}
	}
}
