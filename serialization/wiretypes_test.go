package serialization_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/serialization"
)

// ownMessage stands for one of Troupe's own wire types.
type ownMessage struct {
	Seq  uint64
	From string
}

func init() { wiretypes.MustRegister[ownMessage]("troupe.test.OwnMessage") }

func TestTroupesOwnTypesNeedNoRegistration(t *testing.T) {
	reg := serialization.NewRegistry()
	manifest, data, err := reg.Marshal(&ownMessage{Seq: 7, From: "a"})
	if err != nil || manifest != "troupe.test.OwnMessage" {
		t.Fatalf("Marshal = %q, %v", manifest, err)
	}
	if m, ok := reg.Manifest(ownMessage{}); !ok || m != manifest {
		t.Errorf("Manifest = %q %v", m, ok)
	}
	v, err := reg.Unmarshal(manifest, data)
	if err != nil || v != (ownMessage{Seq: 7, From: "a"}) {
		t.Fatalf("Unmarshal = %#v, %v", v, err)
	}
	codec := reg.NewCodec(nil)
	manifest, data, err = codec.Append(nil, ownMessage{Seq: 8})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := codec.Decode(manifest, data); err != nil || v != (ownMessage{Seq: 8}) {
		t.Fatalf("Decode = %#v, %v", v, err)
	}
	// The namespace and the types are Troupe's.
	if err := serialization.Register[struct{ X int }](reg, "troupe.mine"); !errors.Is(err, serialization.ErrDuplicate) {
		t.Errorf("registering a reserved name: %v", err)
	}
	if err := serialization.Register[ownMessage](reg, "shop.Own"); !errors.Is(err, serialization.ErrDuplicate) {
		t.Errorf("registering Troupe's type: %v", err)
	}
}

// Encoding one of Troupe's own types costs what encoding a registered one does: no
// lookup allocates (its entry is made once), and a flat one takes the fast path.
func TestOwnTypesEncodeWithoutAllocating(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	reg := serialization.NewRegistry()
	codec := reg.NewCodec(nil)
	m := &ownMessage{Seq: 9, From: "b"}
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = codec.Append(dst[:0], m) }); n > 0 {
		t.Errorf("Codec.Append of a wire type allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = reg.AppendMarshal(dst[:0], m, nil) }); n > 0 {
		t.Errorf("AppendMarshal of a wire type allocates %v times, want 0", n)
	}
}
