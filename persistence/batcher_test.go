package persistence

import (
	"errors"
	"fmt"
	"testing"
)

func aw(pid string, seqs ...uint64) AtomicWrite {
	w := AtomicWrite{PersistenceID: pid}
	for _, s := range seqs {
		w.Events = append(w.Events, Record{PersistenceID: pid, SequenceNr: s})
	}
	return w
}

// TestBatchQueue: jobs queued while the call loops are busy go into one call; at most
// maxCalls loops run; a loop ends when nothing is queued.
func TestBatchQueue(t *testing.T) {
	q := batchQueue[string]{maxCalls: 2}
	if !q.submit(writeJob[string]{owner: "a", writes: []AtomicWrite{aw("a", 1)}}) {
		t.Fatal("the first job must start a loop")
	}
	if !q.submit(writeJob[string]{owner: "b", writes: []AtomicWrite{aw("b", 1, 2)}}) {
		t.Fatal("the second job must start a second loop")
	}
	if q.submit(writeJob[string]{owner: "c", writes: []AtomicWrite{aw("c", 5), aw("c", 6)}}) {
		t.Fatal("a third loop started beyond maxCalls")
	}
	jobs, writes, ok := q.take(nil)
	if !ok || len(jobs) != 3 || len(writes) != 4 {
		t.Fatalf("take: %d jobs, %d writes, %v", len(jobs), len(writes), ok)
	}
	if got := fmt.Sprintln(writes[0].PersistenceID, writes[1].PersistenceID, writes[2].PersistenceID, writes[3].PersistenceID); got != "a b c c\n" {
		t.Fatalf("order %s", got)
	}
	if _, _, ok := q.take(nil); ok {
		t.Fatal("a call with nothing queued")
	}
	if q.calls != 1 {
		t.Fatalf("%d loops left", q.calls)
	}
	// One loop ended, so the next job starts another.
	if !q.submit(writeJob[string]{owner: "d", writes: []AtomicWrite{aw("d", 1)}}) {
		t.Fatal("a loop ended, so a new job starts one")
	}
}

func TestSplit(t *testing.T) {
	jobs := []writeJob[string]{
		{owner: "a", id: 1, writes: []AtomicWrite{aw("a", 1)}},
		{owner: "b", id: 4, writes: []AtomicWrite{aw("b", 1), aw("b", 2)}},
	}
	bad := errors.New("conflict")
	fail := errors.New("disk on fire")
	tests := []struct {
		name    string
		results []error
		err     error
		want    string
	}{
		{"each job gets its own results", []error{nil, bad, nil}, nil, "a#1 [<nil>] <nil>; b#4 [conflict <nil>] <nil>"},
		{"a failed call fails every job", nil, fail, "a#1 [] disk on fire; b#4 [] disk on fire"},
		{"too few results fail every job", []error{nil}, nil, "a#1 [] " + errShortResults.Error() + "; b#4 [] " + errShortResults.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			for i, r := range split(jobs, tc.results, tc.err) {
				if i > 0 {
					got += "; "
				}
				got += fmt.Sprintf("%s#%d %v %v", r.owner, r.id, r.results, r.err)
			}
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
