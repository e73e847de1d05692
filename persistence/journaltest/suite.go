package journaltest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// OpenJournal opens the journal under test with its data in dir. The suite
// calls it once per test with a fresh dir, and again with the same dir to
// test reopening. It must fail t rather than return nil.
type OpenJournal func(t *testing.T, dir string) persistence.Journal

// OpenSnapshotStore opens the snapshot store under test with its data in
// dir, like OpenJournal.
type OpenSnapshotStore func(t *testing.T, dir string) persistence.SnapshotStore

// Options describe the plug-in under test. The zero value describes a
// non-durable plug-in and uses the default sizes, but the corruption hooks
// are required by the suite that uses them.
type Options struct {
	// Durable says that data survives Close and a reopen in the same dir;
	// the suite then checks that it does.
	Durable bool

	// CorruptEvent damages the stored event of persistenceID with sequence
	// number seq, the way a flipped bit on a disk would, and returns the
	// journal the suite must use from then on: j itself, or a journal
	// reopened in dir when the hook had to close j to reach the storage.
	// RunJournalSuite fails when it is nil: every plug-in must show that
	// it detects corrupt records.
	CorruptEvent func(t *testing.T, j persistence.Journal, dir, persistenceID string, seq uint64) persistence.Journal

	// CorruptSnapshot is the snapshot-store counterpart of CorruptEvent,
	// required by RunSnapshotSuite.
	CorruptSnapshot func(t *testing.T, s persistence.SnapshotStore, dir, persistenceID string, seq uint64) persistence.SnapshotStore

	// SharedStorage says that open, called again with the dir of a journal
	// that is open, returns a second journal on the same storage, as a
	// second node on a shared database would have (a PostgreSQL journal).
	// The tests of two writers then write through two journals; without
	// it, through one.
	SharedStorage bool

	// LargePayload is the size of the payload of the large-payload tests,
	// in bytes. Zero means 4 MiB.
	LargePayload int

	// Writers is the number of goroutines of the concurrency tests, each
	// with its own persistence id. Zero means 50.
	Writers int

	// Timeout bounds each test's context. Zero means one minute.
	Timeout time.Duration
}

func (o Options) largePayload() int {
	if o.LargePayload > 0 {
		return o.LargePayload
	}
	return 4 << 20
}

func (o Options) writers() int {
	if o.Writers > 0 {
		return o.Writers
	}
	return 50
}

func (o Options) context(t *testing.T) context.Context {
	d := o.Timeout
	if d <= 0 {
		d = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// peculiarIDs are persistence ids that a careless key layout would mix up:
// prefixes of each other, ids holding 0x00 and 0xff, and a long one.
var peculiarIDs = []string{
	"p", "pp", "p\x00", "p\x00\x01", "p\x01", "p\xff", "\x00", "\xff\xff", "é", "p/1", string(bytes.Repeat([]byte("x"), 512)),
}

// payloadFor returns a payload that identifies its event.
func payloadFor(pid string, seq uint64) []byte {
	return fmt.Appendf(nil, "%q#%d", pid, seq)
}

// event returns a record with a payload that identifies it.
func event(pid string, seq uint64) persistence.Record {
	return persistence.Record{
		PersistenceID: pid,
		SequenceNr:    seq,
		Manifest:      "journaltest.Event",
		Payload:       payloadFor(pid, seq),
	}
}

// write returns an atomic write of the events from..to of pid.
func write(pid string, from, to uint64) persistence.AtomicWrite {
	w := persistence.AtomicWrite{PersistenceID: pid}
	for seq := from; seq <= to; seq++ {
		w.Events = append(w.Events, event(pid, seq))
	}
	return w
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := n - n%8; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}
