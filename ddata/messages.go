package ddata

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/troupe-go/troupe/serialization"
)

// The messages replicators send each other. Each names its sender (From), which the
// receiver checks against the address the message came from. Values travel as
// envelopeWire (the value encoded with its manifest, plus its pruning state), so a
// value that does not decode is refused alone and the rest of a message is used.

// writeMsg carries a value (or a deletion) to a replica for a write with a
// consistency level other than local; the replica answers with writeReplyMsg.
type writeMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	From     nodeWire
	ID       uint64
	Key      string
	Env      envelopeWire
}

// Kinds of writeReplyMsg.
const (
	replyAck       uint8 = iota + 1 // stored
	replyNack                       // could not store (a value that did not decode or merge, or a failed durable store)
	replyDeltaNack                  // a delta that could not be applied: send the full value
)

// writeReplyMsg answers a writeMsg, or a deltasMsg that asked for a reply.
type writeReplyMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	From     nodeWire
	ID       uint64
	Kind     uint8
}

// readMsg asks a replica for its value of Key; it answers with readResultMsg.
type readMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	From     nodeWire
	ID       uint64
	Key      string
}

// readResultMsg answers a readMsg: Found false when the replica lacks the key.
type readResultMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	From     nodeWire
	ID       uint64
	Found    bool
	Env      envelopeWire
}

// statusMsg is a gossip round's digests: Keys[i] has the digest
// Digests[32*i:32*i+32]. Chunk and TotChunks say which share of the sender's keys
// it covers (see gossipStatus).
type statusMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack  struct{} `msgpack:",as_array"`
	From      nodeWire
	Chunk     int
	TotChunks int
	Keys      []string
	Digests   []byte
}

// gossipMsg carries full values: the answer to a status (SendBack asks the
// receiver to answer with its own values of the keys that still differ after the
// merge), or to a fullRequestMsg.
type gossipMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	From     nodeWire
	SendBack bool
	Entries  []keyedEnvelope
}

type keyedEnvelope struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	Key      string
	Env      envelopeWire
}

// deltasMsg carries the deltas of some keys, each composed from the sender's
// changes FromSeq..ToSeq of the key. An empty Manifest is a change without a
// delta: the receiver asks for the full value. With Reply set (a write with a
// consistency level, ID its id, one key) the receiver answers with writeReplyMsg.
type deltasMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	From     nodeWire
	ID       uint64
	Reply    bool
	Deltas   []deltaWire
}

type deltaWire struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	Key      string
	Manifest string
	Data     []byte
	FromSeq  uint64
	ToSeq    uint64
}

// fullRequestMsg asks for the full values of Keys (after a gap in their deltas);
// the answer is a gossipMsg.
type fullRequestMsg struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	From     nodeWire
	Keys     []string
}

// SuppressDeadLetterLog: replicators send these to every replica, periodically
// (gossip, status) and for each read and write with a level above local; those sent
// to a member that is leaving, crashed, was removed or has not started its replicator
// yet die as expected dead letters (counted, not logged). A read or write that misses
// its replicas ends in a timeout its caller sees.
func (*writeMsg) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as writeMsg's.
func (*writeReplyMsg) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as writeMsg's.
func (*readMsg) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as writeMsg's.
func (*readResultMsg) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as writeMsg's.
func (*statusMsg) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as writeMsg's.
func (*gossipMsg) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as writeMsg's.
func (*deltasMsg) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as writeMsg's.
func (*fullRequestMsg) SuppressDeadLetterLog() {}

// messageTypes are the replicator's messages and their names in the registry.
var messageTypes = []struct {
	name string
	reg  func(*serialization.Registry, string) error
	zero any
}{
	{"ddata.msg.Write", serialization.Register[*writeMsg], &writeMsg{}},
	{"ddata.msg.WriteReply", serialization.Register[*writeReplyMsg], &writeReplyMsg{}},
	{"ddata.msg.Read", serialization.Register[*readMsg], &readMsg{}},
	{"ddata.msg.ReadResult", serialization.Register[*readResultMsg], &readResultMsg{}},
	{"ddata.msg.Status", serialization.Register[*statusMsg], &statusMsg{}},
	{"ddata.msg.Gossip", serialization.Register[*gossipMsg], &gossipMsg{}},
	{"ddata.msg.Deltas", serialization.Register[*deltasMsg], &deltasMsg{}},
	{"ddata.msg.FullRequest", serialization.Register[*fullRequestMsg], &fullRequestMsg{}},
}

// registerAll registers the package's types (RegisterTypes) and the replicator's
// messages in reg, skipping what reg already holds under the same name: several
// replicators may share one registry (nodes in one process, a restart). A name or
// type registered differently is an error.
func registerAll(reg *serialization.Registry) error {
	if m, ok := reg.Manifest(&GCounter{}); !ok {
		if err := RegisterTypes(reg); err != nil {
			return err
		}
	} else if m != "ddata.GCounter" {
		return fmt.Errorf("%w: *ddata.GCounter is registered as %q, not ddata.GCounter", ErrInvalidConfig, m)
	}
	var errs []error
	for _, t := range messageTypes {
		if m, ok := reg.Manifest(t.zero); ok {
			if m != t.name {
				errs = append(errs, fmt.Errorf("%w: %s is registered as %q", ErrInvalidConfig, reflect.TypeOf(t.zero), m))
			}
			continue
		}
		errs = append(errs, t.reg(reg, t.name))
	}
	return errors.Join(errs...)
}
