package badgerjournal

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

func TestEventEncodingRoundTrip(t *testing.T) {
	r := persistence.Record{
		PersistenceID: "p\x00q", SequenceNr: 7, Manifest: "m", Payload: []byte("payload"),
		Tags: []string{"a", "", "ccc"}, WriterID: "w",
	}
	ts := time.Date(2025, 5, 6, 7, 8, 9, 10, time.UTC).UnixNano()
	buf := make([]byte, 0, eventSize(&r))
	_, key, value := appendEvent(buf, 3, &r, ts)
	if want := appendEventKey(nil, 3, 7); !bytes.Equal(key, want) {
		t.Fatalf("key %x, want %x", key, want)
	}
	if len(key)+len(value) != eventSize(&r) || cap(buf) != eventSize(&r) {
		t.Fatalf("eventSize is off: %d+%d vs %d", len(key), len(value), eventSize(&r))
	}
	var d eventDecoder
	got, err := d.decode(r.PersistenceID, 7, key, value)
	if err != nil {
		t.Fatal(err)
	}
	if got.Manifest != r.Manifest || got.WriterID != r.WriterID || !slices.Equal(got.Tags, r.Tags) ||
		!bytes.Equal(got.Payload, r.Payload) || got.Timestamp.UnixNano() != ts {
		t.Fatalf("decoded %+v, want %+v", got, r)
	}
	// Any single flipped bit is detected.
	for i := range value {
		for bit := 0; bit < 8; bit++ {
			damaged := slices.Clone(value)
			damaged[i] ^= 1 << bit
			if _, err := d.decode(r.PersistenceID, 7, key, damaged); err == nil {
				t.Fatalf("a flipped bit %d of byte %d went unnoticed", bit, i)
			}
		}
	}
	// The same value under another key is detected too.
	other := appendEventKey(nil, 3, 8)
	if _, err := d.decode(r.PersistenceID, 8, other, value); !errors.Is(err, errChecksum) {
		t.Fatalf("value under the wrong key: %v", err)
	}
}

func TestPrefixesDoNotOverlap(t *testing.T) {
	ids := []string{"", "a", "ab", "a\x00", "a\x00b", "\x01a", string(make([]byte, 200)), string(make([]byte, 201))}
	for _, x := range ids {
		for _, y := range ids {
			if x == y {
				continue
			}
			px := appendPrefix(nil, kindSnapshot, x)
			ky := appendSeqKey(nil, kindSnapshot, y, 1)
			if bytes.HasPrefix(ky, px) {
				t.Errorf("the keys of %q start with the prefix of %q", y, x)
			}
		}
	}
}

// FuzzDecodeEvent: the event decoder never panics and never accepts a value
// whose checksum does not match. Values are sealed with a valid checksum
// before decoding half of the time, so the parser behind the checksum is
// exercised too.
func FuzzDecodeEvent(f *testing.F) {
	r := persistence.Record{PersistenceID: "p", SequenceNr: 1, Manifest: "m", Payload: []byte("x"), Tags: []string{"t"}, WriterID: "w"}
	_, _, v := appendEvent(nil, 1, &r, 1)
	f.Add(v, true)
	f.Add(v, false)
	f.Add([]byte{}, true)
	f.Add(make([]byte, headerLen), true)
	f.Add(append(make([]byte, headerLen), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), true)
	key := appendEventKey(nil, 1, 1)
	f.Fuzz(func(t *testing.T, value []byte, sealIt bool) {
		if sealIt && len(value) >= headerLen {
			value = slices.Clone(value)
			value[4] = formatVersion
			seal(key, value)
		}
		var d eventDecoder
		rec, err := d.decode("p", 1, key, value)
		if err != nil {
			if !errors.Is(err, errChecksum) && !errors.Is(err, errMalformed) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if len(rec.Payload) > len(value) || len(rec.Tags) > len(value) {
			t.Fatalf("decoded more than the value holds: %+v", rec)
		}
		if _, err := decodeSnapshot("p", 1, key, value); err != nil && !errors.Is(err, errMalformed) {
			t.Fatalf("snapshot decoder: %v", err)
		}
	})
}
