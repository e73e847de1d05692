package actor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

type service struct{ n int }

var errServiceStarted = errors.New("service already started")

func TestOncePerSystemStartsOnce(t *testing.T) {
	ext := actor.NewOncePerSystem[service]("service")
	sys := testkit.NewSystem(t)
	if ext.Get(sys) != nil {
		t.Fatal("Get before Start must be nil")
	}
	var runs atomic.Int32
	results := make([]*service, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = ext.Start(sys, errServiceStarted, func() (*service, error) {
				return &service{n: int(runs.Add(1))}, nil
			})
		})
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("start ran %d times, want 1", runs.Load())
	}
	var started *service
	for i, err := range errs {
		switch {
		case err == nil && started == nil:
			started = results[i]
		case err == nil:
			t.Fatal("two Starts succeeded")
		case !errors.Is(err, errServiceStarted):
			t.Fatalf("a second Start returned %v, want the already-started error", err)
		}
	}
	if started == nil || ext.Get(sys) != started {
		t.Fatalf("Get returns %v, want the started instance %v", ext.Get(sys), started)
	}

	other, err := actor.New("other", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Shutdown(context.Background()) }()
	if ext.Get(other) != nil {
		t.Fatal("another system must not see the instance")
	}
}

func TestOncePerSystemFailureLeavesNoInstance(t *testing.T) {
	ext := actor.NewOncePerSystem[service]("service")
	sys := testkit.NewSystem(t)
	boom := errors.New("boom")
	if _, err := ext.Start(sys, errServiceStarted, func() (*service, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Start returned %v, want start's error", err)
	}
	if ext.Get(sys) != nil {
		t.Fatal("a failed Start must keep no instance")
	}
	s, err := ext.Start(sys, errServiceStarted, func() (*service, error) { return &service{n: 2}, nil })
	if err != nil || ext.Get(sys) != s {
		t.Fatalf("a Start after a failed one: %v, %v", s, err)
	}
}
