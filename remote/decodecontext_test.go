package remote_test

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/wirebatch"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/vmihailenco/msgpack/v5"
)

// decodedIn records the system its decoder's context names (wirebatch.ReceivingSystem).
type decodedIn struct{ sys *actor.System }

func (d *decodedIn) EncodeMsgpack(enc *msgpack.Encoder) error { return enc.EncodeBool(true) }

func (d *decodedIn) DecodeMsgpack(dec *msgpack.Decoder) error {
	if err := dec.Skip(); err != nil {
		return err
	}
	if rs, ok := serialization.DecoderContext(dec).(wirebatch.ReceivingSystem); ok {
		d.sys = rs.ReceivingSystem()
	}
	return nil
}

// A message from another node decodes under a context that names the system it
// arrived at: batches of other packages (sharding's) find their extension with it and
// decode their messages on the reader.
func TestInboundDecoderContextNamesTheReceivingSystem(t *testing.T) {
	reg := registry(t)
	if err := serialization.Register[*decodedIn](reg, "test.DecodedIn"); err != nil {
		t.Fatal(err)
	}
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	probe := testkit.NewProbe(t, b.sys)
	target, err := a.sys.Resolve(probe.Ref().URI())
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Tell(&decodedIn{}); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ExpectMsgType[*decodedIn](probe); got.sys != b.sys {
		t.Fatalf("decoded under a context naming %v, want the receiving system %v", got.sys, b.sys)
	}
}
