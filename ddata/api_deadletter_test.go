package ddata_test

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/ddata"
)

// TestRepliesToAStoppedRequesterAreNotLogged: the replicator's answers are expected
// dead letters when their requester stopped meanwhile (counted, not logged).
func TestRepliesToAStoppedRequesterAreNotLogged(t *testing.T) {
	for _, msg := range []any{
		ddata.ReadResponse[*ddata.GCounter]{},
		ddata.UpdateResponse[*ddata.GCounter]{},
		ddata.DeleteResponse[*ddata.GCounter]{},
	} {
		if _, ok := msg.(actor.DeadLetterSuppression); !ok {
			t.Errorf("%T is logged as a dead letter", msg)
		}
	}
}
