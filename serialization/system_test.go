package serialization_test

import (
	"testing"

	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// Get returns the registry the system's transport uses, or the one attached.
func TestGetSystemRegistry(t *testing.T) {
	sys := testkit.NewSystem(t)
	if reg := serialization.Get(sys); reg != nil {
		t.Fatalf("Get of a system without a registry = %p, want nil", reg)
	}
	own := serialization.NewRegistry()
	serialization.Attach(sys, own)
	if serialization.Get(sys) != own {
		t.Fatal("Get does not return the attached registry")
	}

	wired := testkit.NewSystem(t)
	reg := serialization.NewRegistry()
	if _, err := remote.Start(wired, remote.Config{Registry: reg, ListenHost: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if serialization.Get(wired) != reg {
		t.Error("Get does not return the registry of the system's transport")
	}
	if serialization.Get(sys) != own {
		t.Error("another system's transport changed the first system's registry")
	}
}
