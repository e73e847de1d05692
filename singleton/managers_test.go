package singleton_test

import (
	"context"
	"time"

	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
)

// TestManagersListsThisMembersManagers checks that Managers lists the managers started
// on a member, by name, each with the status that says where its singleton runs.
func TestManagersListsThisMembersManagers(t *testing.T) {
	h := newHarness(t, harnessOptions{nodes: 1})
	sys := h.c.Node(0).System
	if _, err := singleton.Start(sys, singleton.Config{Name: "another",
		Props: actor.PropsOf(func() actor.Actor { return actor.ReceiveFunc(func(actor.Context) {}) })}); err != nil {
		t.Fatal(err)
	}
	ms := singleton.Managers(sys)
	if len(ms) != 2 || ms[0].Name() != "another" || ms[1].Name() != "counter" {
		var names []string
		for _, m := range ms {
			names = append(names, m.Name())
		}
		t.Fatalf("Managers = %v, want [another counter]", names)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	st, err := ms[1].AwaitStatus(ctx, func(s singleton.Status) bool { return s.Running })
	if err != nil {
		t.Fatal(err)
	}
	if st.Oldest != h.addr(0) {
		t.Fatalf("Oldest = %v, want this member %v", st.Oldest, h.addr(0))
	}
	if got := singleton.Managers(h.c.Node(0).System); len(got) != 2 {
		t.Fatalf("a second call returned %d managers", len(got))
	}
}
