package remote

import (
	"context"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

func TestAnAskReplyAddressTravelsAsALiteralSpelledAsItsURI(t *testing.T) {
	sys := plainSystem(t)
	r, err := Start(sys, Config{Registry: serialization.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	senders := make(chan actor.Ref, 1)
	asked, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(string); ok {
			senders <- ctx.Sender()
		}
	}), "asked")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asked.Ask(ctx, "who is asking?")
	future := <-senders

	q := userQueue{self: r.addr, selfStr: r.self}
	q.add(localWire("/temp/$9", 9), future, "m", []byte{1}, nil)
	var f userFields
	eachFrame(q.buf, func(body []byte) {
		var ok bool
		if f, ok = readBack(body, make([]string, dictSize)); !ok {
			t.Fatal("frame not read back")
		}
	})
	if f.sender != future.URI() || !f.temp {
		t.Errorf("sender %q (literal %v), want %q as a literal", f.sender, f.temp, future.URI())
	}
	if f.rcpt != "/temp/$9#9" {
		t.Errorf("recipient %q", f.rcpt)
	}
	if len(q.dict.slots) != 1 { // the manifest only
		t.Errorf("%d dictionary entries in use, want 1: temporary actors take none", len(q.dict.slots))
	}

	// A system that is not this one spells its own actors' paths.
	other := plainSystem(t)
	if _, err := Start(other, Config{Registry: serialization.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	otherAsked, err := other.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(string); ok {
			senders <- ctx.Sender()
		}
	}), "asked")
	if err != nil {
		t.Fatal(err)
	}
	otherAsked.Ask(ctx, "and now?")
	foreignFuture := <-senders
	q = userQueue{self: r.addr, selfStr: r.self}
	q.add("/user/x", foreignFuture, "m", []byte{1}, nil)
	eachFrame(q.buf, func(body []byte) { f, _ = readBack(body, make([]string, dictSize)) })
	if f.sender != foreignFuture.URI() {
		t.Errorf("another system's ask: sender %q, want %q", f.sender, foreignFuture.URI())
	}
}

func TestARemoteRefTakesItsWireNameFromTheURI(t *testing.T) {
	p := &peer{}
	for _, tc := range []struct {
		uri, path string
		uid       uint64
		wire      string
	}{
		{"troupe://a@h:1/temp/$x#12", "/temp/$x", 12, "/temp/$x#12"},
		{"troupe://a@h:1/user/b#007", "/user/b", 7, "/user/b#7"}, // not canonical: spelled anew
		{"troupe://a@h:1/user/b", "/user/b", 0, "/user/b"},
	} {
		if got := newRemoteRefIn(p, tc.uri, tc.path, tc.uid); got.wire != tc.wire || got.path != tc.path || got.uid != tc.uid {
			t.Errorf("%s: %+v", tc.uri, got)
		}
	}
}
