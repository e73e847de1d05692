package ddata

import (
	"maps"
	"slices"
	"time"
)

// defaultNotifyInterval is how often subscribers are told of changes (Akka's
// notify-subscribers-interval).
const defaultNotifyInterval = 500 * time.Millisecond

// notification tells subscribers that key changed (or was deleted): the replicator
// sends each of them the key's current value, or Deleted.
type notification[S comparable] struct {
	key         string
	subscribers []S
}

// subscribers is the replicator's subscription bookkeeping, for subscriber handles
// of type S (the actor's refs). A subscriber hears of a key at most once per notify
// interval, and only when the key's digest differs from the one it was last told
// of. A new subscriber is told the current value at once (Subscribe reports it).
type subscribers[S comparable] struct {
	interval time.Duration
	subs     map[string]map[S]struct{}
	told     map[string]Digest   // per key, the digest subscribers last heard of
	changed  map[string]struct{} // keys whose digest changed since the last notify
	last     time.Time           // the last notify
}

func newSubscribers[S comparable](interval time.Duration) *subscribers[S] {
	if interval <= 0 {
		interval = defaultNotifyInterval
	}
	return &subscribers[S]{
		interval: interval,
		subs:     make(map[string]map[S]struct{}),
		told:     make(map[string]Digest),
		changed:  make(map[string]struct{}),
	}
}

// subscribe adds s to key's subscribers. current is the key's digest now (ok false
// when the key is absent); subscribe reports whether to send s the current value
// at once.
func (b *subscribers[S]) subscribe(key string, s S, current Digest, ok bool) (sendNow bool) {
	if b.subs[key] == nil {
		b.subs[key] = make(map[S]struct{})
		if ok {
			b.told[key] = current
		}
	}
	b.subs[key][s] = struct{}{}
	return ok
}

// unsubscribe removes s from key's subscribers (all keys when key is ""), for an
// Unsubscribe or a terminated subscriber.
func (b *subscribers[S]) unsubscribe(key string, s S) {
	for k, set := range b.subs {
		if key != "" && k != key {
			continue
		}
		delete(set, s)
		if len(set) == 0 {
			delete(b.subs, k)
			delete(b.told, k)
			delete(b.changed, k)
		}
	}
}

// has reports whether key has subscribers; the replicator computes a key's digest
// for notification only then.
func (b *subscribers[S]) has(key string) bool { return len(b.subs[key]) > 0 }

// update records key's digest after a change; a digest equal to the one last told
// is no change.
func (b *subscribers[S]) update(key string, d Digest) {
	if !b.has(key) {
		return
	}
	if told, ok := b.told[key]; ok && told == d {
		delete(b.changed, key)
		return
	}
	b.changed[key] = struct{}{}
}

// notify returns the notifications due at now: nothing before interval has passed
// since the last notify unless force (FlushChanges). digest gives a key's current
// digest (deletedDigest once deleted).
func (b *subscribers[S]) notify(now time.Time, force bool, digest func(key string) Digest) []notification[S] {
	if !force && now.Sub(b.last) < b.interval {
		return nil
	}
	b.last = now
	var out []notification[S]
	for _, key := range slices.Sorted(maps.Keys(b.changed)) {
		d := digest(key)
		if told, ok := b.told[key]; ok && told == d {
			continue
		}
		b.told[key] = d
		subs := make([]S, 0, len(b.subs[key]))
		for s := range b.subs[key] {
			subs = append(subs, s)
		}
		out = append(out, notification[S]{key: key, subscribers: subs})
	}
	clear(b.changed)
	return out
}
