package pgjournal

import (
	"bytes"
	"testing"

	"github.com/troupe-go/troupe/persistence"
)

// TestPayloadBlocks: payloads copied into shared blocks are copies, end at
// their own length (appending to one cannot reach the next), and a payload
// too large for a block, or one that does not fit in what is left of the
// current block, is still copied whole.
func TestPayloadBlocks(t *testing.T) {
	var d eventDecoder
	src := make([]byte, maxBlockedPayload+1)
	sizes := []int{1, 100, maxBlockedPayload, maxBlockedPayload + 1, 7}
	for len(sizes) < 200 { // several blocks' worth
		sizes = append(sizes, 1+len(sizes)*37%maxBlockedPayload)
	}
	var got [][]byte
	for i, n := range sizes {
		for j := range src[:n] {
			src[j] = byte(i + j)
		}
		p := d.payload(src[:n])
		if len(p) != n || cap(p) != n {
			t.Fatalf("payload %d: len %d cap %d, want both %d", i, len(p), cap(p), n)
		}
		got = append(got, p)
	}
	clear(src) // the copies must not alias the source
	for i, p := range got {
		_ = append(p, 0xff, 0xff) // must not write into a neighbour
		for j, b := range p {
			if b != byte(i+j) {
				t.Fatalf("payload %d byte %d: %#x, want %#x", i, j, b, byte(i+j))
			}
		}
	}
}

// TestKeptRecordsAreIntact: the records a replay hands out stay as they were
// after the replay has moved on and finished (their payloads do not alias
// pgx's read buffer), across pages, and appending to one payload does not
// change another.
func TestKeptRecordsAreIntact(t *testing.T) {
	s, _ := openFresh(t, func(c *setup) { c.ReplayPageSize = 7 })
	ctx := testContext(t)
	const events = 100
	payloadOf := func(seq uint64) []byte {
		// Sizes around the block limits, and beyond them.
		n := int(seq*53) % (2 * maxBlockedPayload)
		return bytes.Repeat([]byte{byte(seq)}, n+1)
	}
	w := persistence.AtomicWrite{PersistenceID: "kept"}
	for seq := uint64(1); seq <= events; seq++ {
		w.Events = append(w.Events, persistence.Record{PersistenceID: "kept", SequenceNr: seq, Manifest: "m", Payload: payloadOf(seq)})
	}
	if res, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w}); err != nil || res[0] != nil {
		t.Fatal(res, err)
	}
	var kept []persistence.Record
	err := s.ReplayMessages(ctx, "kept", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		kept = append(kept, r)
		return nil
	})
	if err != nil || len(kept) != events {
		t.Fatalf("replayed %d events: %v", len(kept), err)
	}
	for _, r := range kept {
		_ = append(r.Payload, 0xee)
	}
	for _, r := range kept {
		if !bytes.Equal(r.Payload, payloadOf(r.SequenceNr)) {
			t.Fatalf("#%d: payload of %d bytes changed after the replay", r.SequenceNr, len(r.Payload))
		}
	}
}
