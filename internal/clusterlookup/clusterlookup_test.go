package clusterlookup

import (
	"context"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSetGet(t *testing.T) {
	sys, err := actor.New("lookup", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	if Get(sys) != nil {
		t.Fatal("a node before Set")
	}
	Set(sys, nil)
	if Get(sys) != nil {
		t.Fatal("a node after Set(nil)")
	}
}
