package singleton

import (
	"errors"
	"reflect"
	"testing"

	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/serialization"
)

// A post survives the registry's encoding, and what is not a post is refused.
func TestPostRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry() // knows post without registration
	e := core.Envelope{
		Proxy: core.ProxyID{Node: cluster.UniqueAddress{Addr: "troupe://a@10.0.0.1:2552", UID: 7}, Path: "/system/singleton-proxy/x-1#9"},
		Seq:   12, After: 10, Prev: cluster.UniqueAddress{Addr: "troupe://b@10.0.0.2:2552", UID: 8},
		Payload: core.Payload{Manifest: "test.Msg", Data: []byte{1, 2, 3}},
	}
	manifest, data, err := reg.Marshal(toPost(e))
	if err != nil {
		t.Fatal(err)
	}
	if manifest != postName {
		t.Fatalf("manifest %q", manifest)
	}
	back, err := reg.Unmarshal(manifest, data)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := back.(post)
	if !ok {
		t.Fatalf("decoded %T", back)
	}
	if got := p.envelope(e.Payload.Sender); !reflect.DeepEqual(got, e) {
		t.Fatalf("got %+v, want %+v", got, e)
	}
	for _, bad := range [][]byte{{0x90}, {0x93, 1, 2, 3}, {0xa1, 'x'}, append([]byte{0x99, 0xa1, 'a'}, data[2:5]...)} {
		if _, err := reg.Unmarshal(manifest, bad); !errors.Is(err, serialization.ErrDecode) {
			t.Errorf("% x: %v", bad, err)
		}
	}
}
