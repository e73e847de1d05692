package lease

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemoryStore is an in-memory lease store for tests: the leases of several nodes in
// one process share it, and it can be made unavailable, to test what a node does when
// the lease cannot be reached. It keeps no heartbeats: a lease is held until it is
// released, revoked (Revoke), or its store stays unavailable for the holder's
// HeartbeatTimeout. It is safe for concurrent use.
type MemoryStore struct {
	mu          sync.Mutex
	holders     map[string][]*memoryLease // lease name -> the values holding it (one owner)
	unavailable bool
}

// NewMemoryStore returns an empty, available store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{holders: make(map[string][]*memoryLease)}
}

// Lease returns a lease of the store for settings.OwnerName, or an error for invalid
// settings. Several values may share an owner name; they then hold the lease together.
func (s *MemoryStore) Lease(settings Settings) (Lease, error) {
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	return &memoryLease{store: s, settings: settings.WithDefaults()}, nil
}

// Holder returns the owner holding the named lease; ok is false when it is free.
func (s *MemoryStore) Holder(name string) (owner string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.holders[name]; len(h) > 0 {
		return h[0].settings.OwnerName, true
	}
	return "", false
}

// SetAvailable makes the store reachable (true) or not (false). While it is not,
// every Acquire and Release fails with ErrUnavailable, and a holder loses its lease
// (the loss callback gets ErrUnavailable) once the store has been unavailable for the
// holder's HeartbeatTimeout; the lease is then free.
func (s *MemoryStore) SetAvailable(available bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unavailable == !available {
		return
	}
	s.unavailable = !available
	for _, hs := range s.holders {
		for _, l := range hs {
			if available {
				l.stopTimerLocked()
			} else {
				l.startTimerLocked()
			}
		}
	}
}

// Revoke takes the named lease away from its holder at once, as a store whose lease
// expired would: the holder's loss callback gets ErrLost, and the lease is free.
func (s *MemoryStore) Revoke(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.holders[name] {
		l.loseLocked(ErrLost)
	}
	delete(s.holders, name)
}

// RevokeFor takes the named lease away from its holder, as Revoke does, and gives it to
// taker in the same step, as another owner that finds the lease expired takes it: no
// holder of the old owner can acquire it again in between. taker must be a lease of
// this store for the same name; its loss callback is nil until it acquires again.
func (s *MemoryStore) RevokeFor(name string, taker Lease) error {
	l, ok := taker.(*memoryLease)
	if !ok || l.store != s || l.settings.LeaseName != name {
		return fmt.Errorf("lease: RevokeFor %q: the taker is not a lease of this store for that name", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.holders[name] {
		h.loseLocked(ErrLost)
	}
	l.held, l.onLost = true, nil
	s.holders[name] = []*memoryLease{l}
	return nil
}

// memoryLease is one owner's view of a lease of a MemoryStore. Its fields are guarded
// by the store's mutex.
type memoryLease struct {
	store    *MemoryStore
	settings Settings
	held     bool
	onLost   func(error)
	timer    *time.Timer // running while the store is unavailable and this value holds
}

func (l *memoryLease) Settings() Settings { return l.settings }

func (l *memoryLease) Acquire(ctx context.Context, onLost func(error)) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s := l.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unavailable {
		return false, fmt.Errorf("%w: acquiring %q for %q", ErrUnavailable, l.settings.LeaseName, l.settings.OwnerName)
	}
	hs := s.holders[l.settings.LeaseName]
	if len(hs) > 0 && hs[0].settings.OwnerName != l.settings.OwnerName {
		return false, nil
	}
	l.onLost = onLost
	if !l.held {
		l.held = true
		s.holders[l.settings.LeaseName] = append(hs, l)
	}
	return true, nil
}

func (l *memoryLease) Release(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s := l.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unavailable {
		return false, fmt.Errorf("%w: releasing %q for %q", ErrUnavailable, l.settings.LeaseName, l.settings.OwnerName)
	}
	hs := s.holders[l.settings.LeaseName]
	if len(hs) == 0 || hs[0].settings.OwnerName != l.settings.OwnerName {
		l.held = false
		return false, nil
	}
	// The owner gives the lease up, whichever of its values releases it.
	for _, h := range hs {
		h.held = false
		h.stopTimerLocked()
	}
	delete(s.holders, l.settings.LeaseName)
	return true, nil
}

func (l *memoryLease) CheckLease() bool {
	l.store.mu.Lock()
	defer l.store.mu.Unlock()
	return l.held
}

// startTimerLocked starts the countdown to losing the lease while the store is
// unavailable.
func (l *memoryLease) startTimerLocked() {
	if l.timer != nil {
		return
	}
	l.timer = time.AfterFunc(l.settings.HeartbeatTimeout, func() {
		s := l.store
		s.mu.Lock()
		defer s.mu.Unlock()
		if l.timer == nil || !l.held {
			return // the store came back, or the lease was released, meanwhile
		}
		l.timer = nil
		name := l.settings.LeaseName
		s.holders[name] = slices.DeleteFunc(s.holders[name], func(h *memoryLease) bool { return h == l })
		if len(s.holders[name]) == 0 {
			delete(s.holders, name)
		}
		l.loseLocked(ErrUnavailable)
	})
}

func (l *memoryLease) stopTimerLocked() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// loseLocked marks the lease lost and reports it to the callback, in a goroutine.
func (l *memoryLease) loseLocked(reason error) {
	if !l.held {
		return
	}
	l.held = false
	l.stopTimerLocked()
	if f := l.onLost; f != nil {
		err := fmt.Errorf("%w: %q held by %q", reason, l.settings.LeaseName, l.settings.OwnerName)
		go f(err)
	}
}
