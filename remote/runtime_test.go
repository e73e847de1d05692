package remote

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

// The runtime's own messages round-trip through any registry, without registering
// them; a Failure under its reserved manifest.
func TestRuntimeMessagesRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry()
	for _, msg := range []any{
		actor.PoisonPill{}, actor.Kill{}, actor.GetCurrentChild{}, actor.GetRestartCount{},
		actor.RestartCount{Count: 3}, actor.CurrentChild{}, actor.Terminated{AddressTerminated: true},
	} {
		manifest, payload, err := reg.Marshal(msg)
		if err != nil || !strings.HasPrefix(manifest, "troupe.actor.") {
			t.Fatalf("%T: %q, %v", msg, manifest, err)
		}
		got, err := reg.UnmarshalContext(manifest, payload, nil)
		if err != nil || !reflect.DeepEqual(got, msg) {
			t.Errorf("%T came back as %#v, %v", msg, got, err)
		}
	}
	manifest, payload, err := appendRuntime(nil, actor.Failure{Err: errors.New(strings.Repeat("x", 5000))})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRuntime(manifest, payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := got.(actor.Failure)
	if !errors.Is(f.Err, ErrRemoteFailure) || len(f.Err.Error()) != maxStringLen {
		t.Errorf("failure %v", f.Err)
	}
	if _, _, err := appendRuntime(nil, struct{}{}); err == nil {
		t.Error("an unregistered type encoded")
	}
}
