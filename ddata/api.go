package ddata

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

// Errors of the replicator's operations. The replies of both APIs carry them: a
// blocking call returns the error, and an in-actor reply holds it in its Err field.
// Test with errors.Is; every error wraps one sentinel (or ErrTypeMismatch,
// ErrInvalidConsistency, or serialization.ErrUnregistered).
var (
	// ErrNotFound: no replica that was asked holds the key (Akka's NotFound).
	ErrNotFound = errors.New("ddata: key not found")
	// ErrTimeout: a read, update or delete did not reach the replicas its
	// consistency level needs within the level's timeout (Akka's GetFailure,
	// UpdateTimeout, ReplicationDeleteFailure), or the caller's context ended
	// first. An update or delete is applied locally all the same, and spreads
	// later: a timeout undoes nothing.
	ErrTimeout = errors.New("ddata: timeout")
	// ErrDeleted: the key was deleted; it stays deleted for ever, on every node
	// (Akka's GetDataDeleted, UpdateDataDeleted, DataDeleted).
	ErrDeleted = errors.New("ddata: key deleted")
	// ErrModifyFailed: the update's modify function returned an error, returned
	// nil, or panicked (Akka's ModifyFailure). The replicator keeps running. A
	// change modify made in place before failing stays: fail before changing.
	ErrModifyFailed = errors.New("ddata: modify failed")
	// ErrStoreFailed: a durable key's change could not be stored on disk (Akka's
	// StoreFailure). The change is applied in memory and spreads to other nodes;
	// it may be lost if this node restarts before it is stored again.
	ErrStoreFailed = errors.New("ddata: durable store failed")
	// ErrNotEnoughReplicas: a ReadFrom(n) or WriteTo(n) found fewer than n nodes
	// that count (see ReplicaCount), so it cannot succeed; it fails at once
	// instead of waiting for its timeout. The error names both counts. An update
	// or delete is applied locally all the same, and spreads later. (Akka waits
	// for the timeout and answers GetFailure or UpdateTimeout.)
	ErrNotEnoughReplicas = errors.New("ddata: not enough replicas")
	// ErrStopped: the replicator has stopped (its actor system shut down).
	ErrStopped = errors.New("ddata: replicator stopped")
)

// ReadResponse is the reply to SendRead. Err is nil when the key was found, and
// then Value is a copy that the receiver owns; otherwise Err wraps ErrNotFound,
// ErrTimeout, ErrNotEnoughReplicas, ErrDeleted, ErrTypeMismatch or ErrInvalidConsistency, and Value is
// the zero T. Context is the request context given to SendRead.
type ReadResponse[T ReplicatedData] struct {
	Key     Key[T]
	Value   T
	Err     error
	Context any
}

// UpdateResponse is the reply to SendUpdate. Err is nil when the update reached
// the replicas its level needs (and, for a durable key, the local disk);
// otherwise it wraps ErrTimeout, ErrNotEnoughReplicas, ErrModifyFailed,
// ErrStoreFailed, ErrDeleted, ErrTypeMismatch, ErrInvalidConsistency or
// serialization.ErrUnregistered. Context is the request context given to
// SendUpdate.
type UpdateResponse[T ReplicatedData] struct {
	Key     Key[T]
	Err     error
	Context any
}

// DeleteResponse is the reply to SendDelete. Err is nil when the deletion reached
// the replicas its level needs; otherwise it wraps ErrTimeout or
// ErrNotEnoughReplicas (the key is deleted here all the same), ErrDeleted (it was deleted already), ErrStoreFailed,
// ErrTypeMismatch or ErrInvalidConsistency. Context is the request context given
// to SendDelete.
type DeleteResponse[T ReplicatedData] struct {
	Key     Key[T]
	Err     error
	Context any
}

// KeysResponse is the reply to SendKeys: the ids of the keys this replica holds
// and that are not deleted, sorted.
type KeysResponse struct {
	IDs     []string
	Context any
}

// ReplicaCountResponse answers SendReplicaCount (and ReplicaCount): how many
// replicas the replicator knows, its own included.
type ReplicaCountResponse struct {
	Count   int
	Context any
}

// Changed tells a subscriber (see Subscribe) the key's current value: at once when
// it subscribes to a key that exists, and then whenever the value's digest has
// changed, at most once per notify interval. Value is a copy the subscriber owns.
type Changed[T ReplicatedData] struct {
	Key   Key[T]
	Value T
}

// Deleted tells a subscriber that the key was deleted; it hears nothing more of
// it.
type Deleted[T ReplicatedData] struct {
	Key Key[T]
}

// Read returns the key's value, read from the replicas level asks for and merged
// (the merge is written back locally before Read returns: read repair). The value
// is a copy the caller owns. It fails with ErrNotFound, ErrTimeout,
// ErrNotEnoughReplicas (ReadFrom(n) with fewer nodes), ErrDeleted, ErrTypeMismatch (the key holds another type), ErrInvalidConsistency or ErrStopped.
// It blocks until the answer or ctx's end (ErrTimeout); from inside an actor, use
// SendRead.
//
// (Akka calls this Get; Get here is the extension's lookup, Get(sys).)
func Read[T ReplicatedData](ctx context.Context, r *Replicator, key Key[T], level ReadConsistency) (T, error) {
	q := &readRequest[T]{key: key, level: level, ch: make(chan ReadResponse[T], 1)}
	var zero T
	if err := r.ref.Tell(q); err != nil {
		return zero, r.sendError(err)
	}
	select {
	case resp := <-q.ch:
		return resp.Value, resp.Err
	case <-ctx.Done():
		return zero, contextError(ctx, key.ID())
	case <-r.stopped:
		return zero, ErrStopped
	}
}

// Update changes the key's value: modify receives the current value (or, when the
// key is absent, a copy of initial: nil initial means T's zero value, an empty
// value for every type of this package) and returns the new one. The change is
// applied to the local replica first, so that this node reads its own write at
// once, and then sent to the replicas level asks for. A failure (ErrTimeout,
// ErrNotEnoughReplicas, ErrStoreFailed) does not undo the local change.
//
// modify runs on the replicator's goroutine, one at a time, and must be quick. It
// may change the value it receives in place and return it (cheapest: the value
// records a delta), or return another value of the same type, which is merged into
// the current one; it must not keep the value. Errors: ErrModifyFailed (modify
// returned an error or panicked), ErrTimeout, ErrNotEnoughReplicas (WriteTo(n)
// with fewer nodes), ErrStoreFailed, ErrDeleted,
// ErrTypeMismatch, ErrInvalidConsistency, serialization.ErrUnregistered (T is not
// in the registry) or ErrStopped. It blocks until the answer or ctx's end; from
// inside an actor, use SendUpdate.
func Update[T ReplicatedData](ctx context.Context, r *Replicator, key Key[T], level WriteConsistency, initial T, modify func(T) (T, error)) error {
	q := &updateRequest[T]{key: key, level: level, initial: initial, modify: modify, ch: make(chan UpdateResponse[T], 1)}
	if err := r.ref.Tell(q); err != nil {
		return r.sendError(err)
	}
	select {
	case resp := <-q.ch:
		return resp.Err
	case <-ctx.Done():
		return contextError(ctx, key.ID())
	case <-r.stopped:
		return ErrStopped
	}
}

// Delete deletes the key, here at once and on the replicas level asks for. A
// deleted key stays deleted for ever, everywhere: later reads, updates and deletes
// fail with ErrDeleted, and it can never be used again. Errors: ErrTimeout or
// ErrNotEnoughReplicas (the key is deleted here all the same), ErrDeleted, ErrStoreFailed, ErrTypeMismatch,
// ErrInvalidConsistency or ErrStopped. It blocks until the answer or ctx's end;
// from inside an actor, use SendDelete.
func Delete[T ReplicatedData](ctx context.Context, r *Replicator, key Key[T], level WriteConsistency) error {
	q := &deleteRequest[T]{key: key, level: level, ch: make(chan DeleteResponse[T], 1)}
	if err := r.ref.Tell(q); err != nil {
		return r.sendError(err)
	}
	select {
	case resp := <-q.ch:
		return resp.Err
	case <-ctx.Done():
		return contextError(ctx, key.ID())
	case <-r.stopped:
		return ErrStopped
	}
}

// Keys returns the ids of the keys the local replica holds and that are not
// deleted, sorted. From inside an actor, use SendKeys.
func Keys(ctx context.Context, r *Replicator) ([]string, error) {
	q := &keysRequest{ch: make(chan KeysResponse, 1)}
	if err := r.ref.Tell(q); err != nil {
		return nil, r.sendError(err)
	}
	select {
	case resp := <-q.ch:
		return resp.IDs, nil
	case <-ctx.Done():
		return nil, contextError(ctx, "")
	case <-r.stopped:
		return nil, ErrStopped
	}
}

// ReplicaCount returns how many replicas the replicator knows, its own included:
// the members it replicates with (Up, Leaving and Exiting members with Config.Role,
// reachable or not) plus itself; 1 without a cluster. This is the N that
// consistency levels count from (ReadAll and the Plus levels then leave out
// Exiting members), so a caller can tell, for instance, whether WriteTo(n) can be
// met. It is the replicator's view when it answers; members join and leave. From
// inside an actor, use SendReplicaCount.
func ReplicaCount(ctx context.Context, r *Replicator) (int, error) {
	q := &replicaCountRequest{ch: make(chan ReplicaCountResponse, 1)}
	if err := r.ref.Tell(q); err != nil {
		return 0, r.sendError(err)
	}
	select {
	case resp := <-q.ch:
		return resp.Count, nil
	case <-ctx.Done():
		return 0, contextError(ctx, "")
	case <-r.stopped:
		return 0, ErrStopped
	}
}

// SendReplicaCount is ReplicaCount for an actor: the reply arrives as a
// ReplicaCountResponse carrying reqCtx.
func SendReplicaCount(ctx actor.SenderContext, r *Replicator, reqCtx any) error {
	return ctx.Send(r.ref, &replicaCountRequest{reqCtx: reqCtx})
}

// SendRead is Read for an actor: it sends the request with ctx's actor as the
// sender and returns at once; the reply arrives as a ReadResponse[T] carrying
// reqCtx. It returns an error only when the request could not be sent.
func SendRead[T ReplicatedData](ctx actor.SenderContext, r *Replicator, key Key[T], level ReadConsistency, reqCtx any) error {
	return ctx.Send(r.ref, &readRequest[T]{key: key, level: level, reqCtx: reqCtx})
}

// SendUpdate is Update for an actor: it sends the request with ctx's actor as the
// sender and returns at once; the reply arrives as an UpdateResponse[T] carrying
// reqCtx. modify runs on the replicator's goroutine: it must not touch the calling
// actor's state. It returns an error only when the request could not be sent.
func SendUpdate[T ReplicatedData](ctx actor.SenderContext, r *Replicator, key Key[T], level WriteConsistency, initial T, modify func(T) (T, error), reqCtx any) error {
	return ctx.Send(r.ref, &updateRequest[T]{key: key, level: level, initial: initial, modify: modify, reqCtx: reqCtx})
}

// SendDelete is Delete for an actor: the reply arrives as a DeleteResponse[T]
// carrying reqCtx. It returns an error only when the request could not be sent.
func SendDelete[T ReplicatedData](ctx actor.SenderContext, r *Replicator, key Key[T], level WriteConsistency, reqCtx any) error {
	return ctx.Send(r.ref, &deleteRequest[T]{key: key, level: level, reqCtx: reqCtx})
}

// SendKeys is Keys for an actor: the reply arrives as a KeysResponse carrying
// reqCtx.
func SendKeys(ctx actor.SenderContext, r *Replicator, reqCtx any) error {
	return ctx.Send(r.ref, &keysRequest{reqCtx: reqCtx})
}

// Subscribe makes subscriber, a local actor, receive Changed[T] for the key: at
// once with the current value when the key exists, then whenever its value
// changes (at most once per notify interval, and only when its digest differs
// from the one last told), and Deleted[T] when it is deleted. The subscription
// ends with Unsubscribe or when subscriber stops. A key that holds another type
// than T is logged and not notified.
func Subscribe[T ReplicatedData](r *Replicator, key Key[T], subscriber actor.Ref) error {
	return r.ref.Tell(&subscribeRequest[T]{key: key, subscriber: subscriber})
}

// Unsubscribe ends subscriber's subscription to the key.
func Unsubscribe(r *Replicator, key AnyKey, subscriber actor.Ref) error {
	return r.ref.Tell(&unsubscribeRequest{key: key.ID(), subscriber: subscriber})
}

// contextError is the error of a blocking call whose context ended first.
func contextError(ctx context.Context, key string) error {
	return fmt.Errorf("%w: key %q: %w", ErrTimeout, key, context.Cause(ctx))
}

// request is a message the replicator handles through its own method: the typed
// requests above, whose handling needs their type argument.
type request interface {
	handle(a *replicator, sender actor.Ref)
}

type readRequest[T ReplicatedData] struct {
	key     Key[T]
	level   ReadConsistency
	reqCtx  any
	ch      chan ReadResponse[T]
	replyTo actor.Ref
	start   time.Time // with metrics on
}

func (q *readRequest[T]) handle(a *replicator, sender actor.Ref) {
	q.replyTo, q.start = sender, a.h.started()
	a.read(q.key.id, q.level, q)
}

// checkType reports a value of another type than the key's.
func (q *readRequest[T]) checkType(d ReplicatedData) error {
	if _, ok := d.(T); !ok {
		return q.key.mismatch(d)
	}
	return nil
}

// finish replies with a copy of d (the replicator's own value) or err.
func (q *readRequest[T]) finish(a *replicator, d ReplicatedData, err error) {
	resp := ReadResponse[T]{Key: q.key, Err: err, Context: q.reqCtx}
	if err == nil {
		if resp.Value, err = readerCopy[T](q.key, d); err != nil {
			resp.Err = err
		}
	}
	a.h.readDone(q.level.l, q.start, resp.Err)
	if q.ch != nil {
		q.ch <- resp
		return
	}
	a.reply(q.replyTo, resp)
}

type updateRequest[T ReplicatedData] struct {
	key     Key[T]
	level   WriteConsistency
	initial T
	modify  func(T) (T, error)
	reqCtx  any
	ch      chan UpdateResponse[T]
	replyTo actor.Ref
	start   time.Time // with metrics on
}

func (q *updateRequest[T]) handle(a *replicator, sender actor.Ref) {
	q.replyTo, q.start = sender, a.h.started()
	if err := q.level.Validate(); err != nil {
		q.finish(a, err)
		return
	}
	if q.modify == nil {
		q.finish(a, fmt.Errorf("%w: key %q: nil modify function", ErrModifyFailed, q.key.id))
		return
	}
	e := a.entries[q.key.id]
	var cur T
	full := false // the change has no delta: a copy of initial holds state no delta describes
	switch {
	case e == nil:
		v, fromInitial, err := newValue(a, q.key, q.initial)
		if err != nil {
			q.finish(a, err)
			return
		}
		cur, full = v, fromInitial
	case e.deleted:
		q.finish(a, fmt.Errorf("%w: key %q", ErrDeleted, q.key.id))
		return
	default:
		v, ok := e.data.(T)
		if !ok {
			q.finish(a, q.key.mismatch(e.data))
			return
		}
		cur = v
	}
	out, err := runModify(q.modify, cur)
	if err != nil {
		q.finish(a, fmt.Errorf("key %q: %w", q.key.id, err))
		if e != nil {
			a.localChanged(q.key.id, e, false) // modify may have changed cur before failing
		}
		return
	}
	same := samePointer(out, cur)
	if e == nil {
		if !same {
			if err := cur.MergeData(out); err != nil {
				q.finish(a, fmt.Errorf("%w: key %q: %w", ErrModifyFailed, q.key.id, err))
				return
			}
		}
		e = a.newEntry(q.key.id, cur)
	} else if !same {
		if err := e.data.MergeData(out); err != nil {
			q.finish(a, fmt.Errorf("%w: key %q: %w", ErrModifyFailed, q.key.id, err))
			return
		}
	}
	a.localChanged(q.key.id, e, full || !same)
	a.write(q.key.id, e, q.level, q)
}

// finish replies with err (nil: success).
func (q *updateRequest[T]) finish(a *replicator, err error) {
	resp := UpdateResponse[T]{Key: q.key, Err: err, Context: q.reqCtx}
	a.h.writeDone(q.level.l, q.start, err)
	if q.ch != nil {
		q.ch <- resp
		return
	}
	a.reply(q.replyTo, resp)
}

type deleteRequest[T ReplicatedData] struct {
	key     Key[T]
	level   WriteConsistency
	reqCtx  any
	ch      chan DeleteResponse[T]
	replyTo actor.Ref
	start   time.Time // with metrics on
}

func (q *deleteRequest[T]) handle(a *replicator, sender actor.Ref) {
	q.replyTo, q.start = sender, a.h.started()
	if err := q.level.Validate(); err != nil {
		q.finish(a, err)
		return
	}
	e := a.entries[q.key.id]
	switch {
	case e != nil && e.deleted:
		q.finish(a, fmt.Errorf("%w: key %q", ErrDeleted, q.key.id))
		return
	case e != nil:
		if _, ok := e.data.(T); !ok {
			q.finish(a, q.key.mismatch(e.data))
			return
		}
	}
	a.delete(q.key.id, q.level, q)
}

func (q *deleteRequest[T]) finish(a *replicator, err error) {
	resp := DeleteResponse[T]{Key: q.key, Err: err, Context: q.reqCtx}
	a.h.writeDone(q.level.l, q.start, err)
	if q.ch != nil {
		q.ch <- resp
		return
	}
	a.reply(q.replyTo, resp)
}

type keysRequest struct {
	reqCtx any
	ch     chan KeysResponse
}

func (q *keysRequest) handle(a *replicator, sender actor.Ref) {
	resp := KeysResponse{IDs: a.keyIDs(), Context: q.reqCtx}
	if q.ch != nil {
		q.ch <- resp
		return
	}
	a.reply(sender, resp)
}

type replicaCountRequest struct {
	reqCtx any
	ch     chan ReplicaCountResponse
}

func (q *replicaCountRequest) handle(a *replicator, sender actor.Ref) {
	resp := ReplicaCountResponse{Count: len(a.members) + 1, Context: q.reqCtx}
	if q.ch != nil {
		q.ch <- resp
		return
	}
	a.reply(sender, resp)
}

type subscribeRequest[T ReplicatedData] struct {
	key        Key[T]
	subscriber actor.Ref
}

func (q *subscribeRequest[T]) handle(a *replicator, _ actor.Ref) {
	a.subscribe(q.key.id, q.subscriber, q)
}

// changed returns the notification of d (the replicator's own value), or an error
// when d is not a T.
func (q *subscribeRequest[T]) changed(d ReplicatedData) (any, error) {
	v, err := readerCopy[T](q.key, d)
	if err != nil {
		return nil, err
	}
	return Changed[T]{Key: q.key, Value: v}, nil
}

func (q *subscribeRequest[T]) deleted() any { return Deleted[T]{Key: q.key} }

type unsubscribeRequest struct {
	key        string
	subscriber actor.Ref
}

func (q *unsubscribeRequest) handle(a *replicator, _ actor.Ref) {
	a.unsubscribe(q.key, q.subscriber)
}

type flushRequest struct{}

func (flushRequest) handle(a *replicator, _ actor.Ref) { a.notifySubscribers(true) }

// readerCopy returns a copy of d as a T: the copy a reader owns.
func readerCopy[T ReplicatedData](key Key[T], d ReplicatedData) (T, error) {
	v, ok := d.CloneData().(T)
	if !ok {
		var zero T
		return zero, key.mismatch(d)
	}
	return v, nil
}

// mismatch is the error of a key used with a value of another type.
func (k Key[T]) mismatch(d ReplicatedData) error {
	return fmt.Errorf("%w: key %q holds %T, not %s", ErrTypeMismatch, k.id, d, k.TypeName())
}

// newValue returns the value of a key created by an update: a copy of initial
// (fromInitial), or T's zero value when initial is nil. T must be registered.
func newValue[T ReplicatedData](a *replicator, key Key[T], initial T) (v T, fromInitial bool, err error) {
	iv := reflect.ValueOf(any(initial))
	switch {
	case iv.IsValid() && !(iv.Kind() == reflect.Pointer && iv.IsNil()):
		c, ok := initial.CloneData().(T)
		if !ok {
			return v, false, fmt.Errorf("%w: key %q: CloneData of %T returned another type", ErrTypeMismatch, key.id, initial)
		}
		v, fromInitial = c, true
	case reflect.TypeFor[T]().Kind() == reflect.Pointer:
		v = reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	}
	if _, ok := a.reg.Manifest(v); !ok {
		return v, false, fmt.Errorf("%w: key %q: %s is not registered in the replicator's registry (serialization.Register, or ddata's Register functions)",
			serialization.ErrUnregistered, key.id, key.TypeName())
	}
	return v, fromInitial, nil
}

// runModify calls modify, turning an error, a nil result or a panic into an error
// wrapping ErrModifyFailed.
func runModify[T ReplicatedData](modify func(T) (T, error), cur T) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: panic: %v", ErrModifyFailed, p)
		}
	}()
	out, err = modify(cur)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrModifyFailed, err)
	}
	if v := reflect.ValueOf(any(out)); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return out, fmt.Errorf("%w: modify returned nil", ErrModifyFailed)
	}
	return out, nil
}

// samePointer reports whether a and b are the same pointer (for pointer types; a
// value type is never "the same").
func samePointer[T any](a, b T) bool {
	if reflect.TypeFor[T]().Kind() != reflect.Pointer {
		return false
	}
	return any(a) == any(b)
}

// SuppressDeadLetterLog: a replicator's answer that finds its requester stopped (an
// actor that stopped while its read, update or deletion was on its way, as a sharding
// coordinator handing over at shutdown) says nothing anyone can act on: the dead
// letter is counted and published, not logged. The operation itself was carried out.
func (ReadResponse[T]) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as ReadResponse's.
func (UpdateResponse[T]) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as ReadResponse's.
func (DeleteResponse[T]) SuppressDeadLetterLog() {}
