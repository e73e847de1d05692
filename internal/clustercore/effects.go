package clustercore

import (
	"github.com/troupe-go/troupe/member"
)

// Effect is what the shell must do after an input, in order: Publish, SetTags,
// MarkUp, AskWelcome, AnnounceUp, Removed, Stop, Downed or Log.
type Effect interface{ effect() }

// Publish says: make State the state subscribers read, then send them Events, in
// order.
type Publish struct {
	Events []member.Event
	State  member.CurrentClusterState
}

// SetTags says: publish Self (this member as it is now) in this node's serf tags.
type SetTags struct{ Self member.Member }

// MarkUp says this member is Up: callers waiting for it may go on. It follows the
// Publish that carries this member's MemberUp.
type MarkUp struct{}

// AskWelcome says: send a welcome request to each member of To; each that knows this
// member answers, and the shell passes the answer to Welcomed.
type AskWelcome struct{ To []member.UniqueAddress }

// AnnounceUp says: tell each member of To that this member, Self, moved itself Up;
// each passes the notice to AnnouncedUp.
type AnnounceUp struct {
	To   []member.UniqueAddress
	Self member.Member
}

// Removed says a member other than this one was removed: forget it, and quarantine
// its incarnation, Harmless when it left (it knows it is gone), for good when it was
// downed.
type Removed struct {
	Member   member.UniqueAddress
	Harmless bool
}

// Stop says: stop this node's cluster services (it left, or was downed).
type Stop struct{}

// Downed says this node was downed and has stopped its cluster services; unless
// configured otherwise its system shuts down.
type Downed struct{}

// Level is a Log's severity.
type Level int8

// The levels of Log.
const (
	Debug Level = iota
	Info
	Warn
	Error
)

// Log says: write Msg at Level, with the key-value pairs of Fields.
type Log struct {
	Level  Level
	Msg    string
	Fields []Field
}

// Field is one key and value of a Log.
type Field struct {
	Key   string
	Value string
}

func (Publish) effect()    {}
func (SetTags) effect()    {}
func (MarkUp) effect()     {}
func (AskWelcome) effect() {}
func (AnnounceUp) effect() {}
func (Removed) effect()    {}
func (Stop) effect()       {}
func (Downed) effect()     {}
func (Log) effect()        {}
