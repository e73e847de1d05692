package ddata

import (
	"time"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/zap"
)

// notifier builds a subscriber's typed notifications (subscribeRequest[T]).
type notifier interface {
	changed(d ReplicatedData) (any, error)
	deleted() any
}

// subscribe adds a subscriber and tells it the current value at once.
func (a *replicator) subscribe(key string, ref actor.Ref, n notifier) {
	if ref.Address() == (actor.Address{}) {
		a.log.Warn("ddata: Subscribe with the zero Ref ignored", zap.String("key", key))
		return
	}
	subs := a.notifiers[key]
	if subs == nil {
		subs = make(map[actor.Ref]notifier)
		a.notifiers[key] = subs
	}
	if _, ok := subs[ref]; !ok {
		if a.watching[ref] == 0 {
			a.ctx.Watch(ref)
		}
		a.watching[ref]++
	}
	subs[ref] = n
	e := a.entries[key]
	var d Digest
	if e != nil {
		e.hasSubs = true
		d = a.digestOf(key, e)
	}
	if a.subs.subscribe(key, ref, d, e != nil) {
		a.tell(key, e, ref, n)
		if e.deleted {
			a.unsubscribe(key, ref) // nothing more will happen to the key
		}
	}
}

// unsubscribe removes ref's subscription to key, or to every key when key is "".
func (a *replicator) unsubscribe(key string, ref actor.Ref) {
	for k, subs := range a.notifiers {
		if key != "" && k != key {
			continue
		}
		if _, ok := subs[ref]; !ok {
			continue
		}
		delete(subs, ref)
		a.subs.unsubscribe(k, ref)
		if len(subs) == 0 {
			delete(a.notifiers, k)
			if e := a.entries[k]; e != nil {
				e.hasSubs = false
			}
		}
		if a.watching[ref]--; a.watching[ref] <= 0 {
			delete(a.watching, ref)
			a.ctx.Unwatch(ref)
		}
	}
}

// tell sends one subscriber the key's state: Deleted or Changed.
func (a *replicator) tell(key string, e *entry, ref actor.Ref, n notifier) {
	if e.deleted {
		a.reply(ref, n.deleted())
		return
	}
	msg, err := n.changed(e.data)
	if err != nil {
		a.drops.warn(a.log, "ddata: a subscriber's key holds another type; not notified", zap.String("key", key), zap.Stringer("subscriber", ref), zap.Error(err))
		return
	}
	a.reply(ref, msg)
}

// notifySubscribers tells the subscribers of the keys whose digest changed since
// they last heard: once per notify interval, or at once when forced
// (FlushChanges). The digests of changed keys are computed here, once per key and
// interval, not per change.
func (a *replicator) notifySubscribers(force bool) {
	for _, key := range a.notifyQ {
		if e := a.entries[key]; e != nil {
			e.notifyQueued = false
			if a.subs.has(key) {
				a.subs.update(key, a.digestOf(key, e))
			}
		}
	}
	a.notifyQ = a.notifyQ[:0]
	ns := a.subs.notify(time.Now(), force, func(key string) Digest { return a.digestOf(key, a.entries[key]) })
	for _, nt := range ns {
		e := a.entries[nt.key]
		if e == nil {
			continue
		}
		for _, ref := range nt.subscribers {
			if n := a.notifiers[nt.key][ref]; n != nil {
				a.tell(nt.key, e, ref, n)
			}
		}
		if e.deleted {
			for _, ref := range nt.subscribers {
				a.unsubscribe(nt.key, ref) // nothing more will happen to the key
			}
		}
	}
}
