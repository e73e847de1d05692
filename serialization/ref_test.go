package serialization_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

type withRef struct {
	To   actor.Ref
	None actor.Ref
}

// systemResolver resolves paths in one system.
type systemResolver struct{ sys *actor.System }

func (r systemResolver) ResolveRef(uri string) (actor.Ref, error) { return r.sys.Resolve(uri) }

func TestRefsEncodeAsPathsAndResolveThroughTheContext(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	reg := serialization.NewRegistry()
	if err := serialization.Register[withRef](reg, "test.WithRef"); err != nil {
		t.Fatal(err)
	}
	m, data, err := reg.Marshal(withRef{To: probe.Ref()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := reg.UnmarshalContext(m, data, systemResolver{sys})
	if err != nil {
		t.Fatal(err)
	}
	if w := got.(withRef); w.To != probe.Ref() || !w.None.IsZero() {
		t.Fatalf("decoded %+v, want %v and the zero Ref", w, probe.Ref())
	}
	if _, err := reg.Unmarshal(m, data); !errors.Is(err, serialization.ErrDecode) {
		t.Errorf("decoding a Ref without a resolver: %v, want ErrDecode", err)
	}
}
