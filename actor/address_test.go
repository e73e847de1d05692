package actor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

func TestParsePath(t *testing.T) {
	cases := []struct {
		in   string
		addr actor.Address
		path string
		uid  uint64
	}{
		{"/user/a", actor.Address{}, "/user/a", 0},
		{"/user/a#42", actor.Address{}, "/user/a", 42},
		{"troupe://sys/user/a", actor.Address{System: "sys"}, "/user/a", 0},
		{"troupe://sys@127.0.0.1:2552/user/a/b#7", actor.Address{System: "sys", Host: "127.0.0.1", Port: 2552}, "/user/a/b", 7},
		{"troupe://sys@[::1]:9/temp/$a", actor.Address{System: "sys", Host: "::1", Port: 9}, "/temp/$a", 0},
	}
	for _, c := range cases {
		addr, path, uid, err := actor.ParsePath(c.in)
		if err != nil || addr != c.addr || path != c.path || uid != c.uid {
			t.Errorf("ParsePath(%q) = %v %q %d %v; want %v %q %d", c.in, addr, path, uid, err, c.addr, c.path, c.uid)
		}
	}
	for _, bad := range []string{"", "user/a", "troupe://", "troupe://sys@host/user", "troupe://sys@h:0/a",
		"troupe://sys@h:99999/a", "troupe://s y@h:1/a", "/user/a#x", "/user/a#0", "troupe://sys@:1/a", "//a", "http://x/a"} {
		if _, _, _, err := actor.ParsePath(bad); !errors.Is(err, actor.ErrInvalidPath) {
			t.Errorf("ParsePath(%q) error = %v, want ErrInvalidPath", bad, err)
		}
	}
	a := actor.Address{System: "s", Host: "::1", Port: 5}
	if got, err := actor.ParseAddress(a.String()); err != nil || got != a {
		t.Errorf("ParseAddress(%q) = %v %v", a.String(), got, err)
	}
	if _, err := actor.ParseAddress("troupe://s@h:1/user"); err == nil {
		t.Error("ParseAddress accepted a path")
	}
}

func TestResolveByURIAndUID(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, recorderProps("a", probe, nil), "a")
	if ref.UID() == 0 {
		t.Fatal("a spawned actor has uid 0")
	}
	uri := ref.URI()
	if !strings.HasPrefix(uri, "troupe://"+sys.Name()+"/user/a#") {
		t.Fatalf("URI = %q", uri)
	}
	for _, p := range []string{uri, "/user/a", "troupe://" + sys.Name() + "/user/a"} {
		got, err := sys.Resolve(p)
		if err != nil || got != ref {
			t.Errorf("Resolve(%q) = %v, %v; want %v", p, got, err, ref)
		}
	}
	if _, err := sys.Resolve("/user/a#1"); !errors.Is(err, actor.ErrNotFound) {
		t.Errorf("Resolve with a wrong uid: %v, want ErrNotFound", err)
	}
	if _, err := sys.Resolve("troupe://other/user/a"); !errors.Is(err, actor.ErrNotFound) {
		t.Errorf("Resolve in another system without remoting: %v, want ErrNotFound", err)
	}
	if got, err := sys.Resolve("/"); err != nil || got.Path() != "/" {
		t.Errorf(`Resolve("/") = %v, %v`, got, err)
	}
}

func TestFutureURIResolvesUntilCompleted(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	f := probe.Ref().Ask(t.Context(), "q")
	probe.ExpectMsg("q")
	replyTo := probe.LastSender()
	got, err := sys.Resolve(replyTo.URI())
	if err != nil || got != replyTo {
		t.Fatalf("Resolve(%q) = %v, %v", replyTo.URI(), got, err)
	}
	_ = got.Tell("answer")
	if res, err := f.Result(t.Context()); err != nil || res != "answer" {
		t.Fatalf("future = %v, %v", res, err)
	}
	if _, err := sys.Resolve(replyTo.URI()); !errors.Is(err, actor.ErrNotFound) {
		t.Errorf("a completed future still resolves: %v", err)
	}
}
