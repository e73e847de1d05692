package lease_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/lease"
)

func mustLease(t *testing.T, s *lease.MemoryStore, owner string) lease.Lease {
	t.Helper()
	l, err := s.Lease(lease.Settings{LeaseName: "sbr", OwnerName: owner, HeartbeatInterval: time.Second, HeartbeatTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestSettings(t *testing.T) {
	bad := []lease.Settings{
		{OwnerName: "a"},
		{LeaseName: "x"},
		{LeaseName: "x", OwnerName: "a", HeartbeatInterval: -1},
		{LeaseName: "x", OwnerName: "a", HeartbeatInterval: time.Minute, HeartbeatTimeout: time.Minute},
		{LeaseName: "x", OwnerName: "a", HeartbeatInterval: 3 * time.Minute}, // above the default timeout
	}
	for _, s := range bad {
		if err := s.Validate(); !errors.Is(err, lease.ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v", s, err)
		}
		if _, err := lease.NewMemoryStore().Lease(s); !errors.Is(err, lease.ErrInvalidConfig) {
			t.Errorf("%+v: Lease = %v", s, err)
		}
	}
	d := lease.Settings{LeaseName: "x", OwnerName: "a"}.WithDefaults()
	if d.HeartbeatInterval != lease.DefaultHeartbeatInterval || d.HeartbeatTimeout != lease.DefaultHeartbeatTimeout ||
		d.OperationTimeout != lease.DefaultOperationTimeout {
		t.Errorf("defaults %+v", d)
	}
	l, _ := lease.NewMemoryStore().Lease(lease.Settings{LeaseName: "x", OwnerName: "a"})
	if l.Settings() != d {
		t.Errorf("Settings() = %+v", l.Settings())
	}
}

func TestAcquireAndRelease(t *testing.T) {
	ctx := context.Background()
	s := lease.NewMemoryStore()
	a, b, a2 := mustLease(t, s, "a"), mustLease(t, s, "b"), mustLease(t, s, "a")
	steps := []struct {
		name   string
		do     func() (bool, error)
		want   bool
		holder string
	}{
		{"a acquires", func() (bool, error) { return a.Acquire(ctx, nil) }, true, "a"},
		{"a again: still held", func() (bool, error) { return a.Acquire(ctx, nil) }, true, "a"},
		{"b cannot", func() (bool, error) { return b.Acquire(ctx, nil) }, false, "a"},
		{"another value of owner a holds it too", func() (bool, error) { return a2.Acquire(ctx, nil) }, true, "a"},
		{"b cannot release it", func() (bool, error) { return b.Release(ctx) }, false, "a"},
		{"a2 releases for owner a", func() (bool, error) { return a2.Release(ctx) }, true, ""},
		{"a released too", func() (bool, error) { return a.CheckLease(), nil }, false, ""},
		{"releasing a free lease", func() (bool, error) { return a.Release(ctx) }, false, ""},
		{"b acquires", func() (bool, error) { return b.Acquire(ctx, nil) }, true, "b"},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil || got != st.want {
			t.Fatalf("%s: %v, %v; want %v", st.name, got, err, st.want)
		}
		if h, ok := s.Holder("sbr"); h != st.holder || ok != (st.holder != "") {
			t.Fatalf("%s: holder %q %v, want %q", st.name, h, ok, st.holder)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.Acquire(cancelled, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context: %v", err)
	}
	if _, err := b.Release(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Release with a cancelled context: %v", err)
	}
}

func TestRevokeReportsTheLoss(t *testing.T) {
	s := lease.NewMemoryStore()
	a := mustLease(t, s, "a")
	lost := make(chan error, 1)
	if ok, err := a.Acquire(context.Background(), func(err error) { lost <- err }); !ok || err != nil {
		t.Fatal(ok, err)
	}
	s.Revoke("sbr")
	if err := <-lost; !errors.Is(err, lease.ErrLost) {
		t.Errorf("loss reason %v", err)
	}
	if a.CheckLease() {
		t.Error("still held after Revoke")
	}
	if _, ok := s.Holder("sbr"); ok {
		t.Error("lease not free after Revoke")
	}
}

func TestRevokeForHandsTheLeaseOver(t *testing.T) {
	s := lease.NewMemoryStore()
	a, b := mustLease(t, s, "a"), mustLease(t, s, "b")
	lost := make(chan error, 1)
	if ok, err := a.Acquire(context.Background(), func(err error) { lost <- err }); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.RevokeFor("sbr", b); err != nil {
		t.Fatal(err)
	}
	if err := <-lost; !errors.Is(err, lease.ErrLost) {
		t.Errorf("loss reason %v", err)
	}
	if h, _ := s.Holder("sbr"); h != "b" || !b.CheckLease() || a.CheckLease() {
		t.Errorf("holder %q, b holds %v, a holds %v", h, b.CheckLease(), a.CheckLease())
	}
	if ok, _ := a.Acquire(context.Background(), nil); ok {
		t.Error("the old owner acquired a lease held by the new one")
	}
	if err := s.RevokeFor("other", b); err == nil {
		t.Error("RevokeFor with a lease of another name")
	}
}

func TestUnavailableStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := lease.NewMemoryStore()
		a, b := mustLease(t, s, "a"), mustLease(t, s, "b")
		lost := make(chan error, 1)
		if ok, _ := a.Acquire(ctx, func(err error) { lost <- err }); !ok {
			t.Fatal("a did not acquire")
		}

		// A short outage: operations fail, the holder keeps the lease.
		s.SetAvailable(false)
		if _, err := b.Acquire(ctx, nil); !errors.Is(err, lease.ErrUnavailable) {
			t.Fatalf("Acquire while unavailable: %v", err)
		}
		if _, err := a.Release(ctx); !errors.Is(err, lease.ErrUnavailable) {
			t.Fatalf("Release while unavailable: %v", err)
		}
		time.Sleep(9 * time.Second)
		s.SetAvailable(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case err := <-lost:
			t.Fatalf("lost after a short outage: %v", err)
		default:
		}
		if !a.CheckLease() {
			t.Fatal("not held after a short outage")
		}

		// An outage of the heartbeat timeout: the holder loses it, and it is free.
		s.SetAvailable(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		select {
		case err := <-lost:
			if !errors.Is(err, lease.ErrUnavailable) {
				t.Fatalf("loss reason %v", err)
			}
		default:
			t.Fatal("no loss after the heartbeat timeout")
		}
		if a.CheckLease() {
			t.Fatal("held after the loss")
		}
		s.SetAvailable(true)
		if ok, _ := b.Acquire(ctx, nil); !ok {
			t.Fatal("b cannot acquire the lost lease")
		}
		s.SetAvailable(true) // no change
	})
}
