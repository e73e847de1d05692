package remote

import (
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/serialization"
)

// The runtime's own messages cross the wire without the application registering
// them. An actor.Failure travels as its error's text, under a reserved manifest that
// starts with '$' (a registered name cannot), and arrives as an actor.Failure whose
// error has that text and matches ErrRemoteFailure.

// ErrRemoteFailure is matched (errors.Is) by the error of an actor.Failure that came
// from another system, such as the error of an Ask answered with a Failure there. The
// error's text is the original error's; its type and identity stay behind.
var ErrRemoteFailure = errors.New("remote: failure reported by an actor in another system")

// remoteFailure is the error of an actor.Failure decoded from the wire.
type remoteFailure struct{ text string }

func (e *remoteFailure) Error() string        { return e.text }
func (e *remoteFailure) Is(target error) bool { return target == ErrRemoteFailure }

const (
	runtimePrefix   = "$"
	manifestFailure = "$troupe.Failure"
)

// The runtime's messages that msgpack encodes as they are are Troupe's own wire types
// (internal/wiretypes): every registry knows them, so the application's registry
// encodes and decodes them like its own types.
func init() {
	wiretypes.MustRegister[actor.PoisonPill]("troupe.actor.PoisonPill")
	wiretypes.MustRegister[actor.Kill]("troupe.actor.Kill")
	wiretypes.MustRegister[actor.Terminated]("troupe.actor.Terminated")
	wiretypes.MustRegister[actor.GetCurrentChild]("troupe.actor.GetCurrentChild")
	wiretypes.MustRegister[actor.CurrentChild]("troupe.actor.CurrentChild")
	wiretypes.MustRegister[actor.GetRestartCount]("troupe.actor.GetRestartCount")
	wiretypes.MustRegister[actor.RestartCount]("troupe.actor.RestartCount")
}

// appendRuntime encodes the runtime's messages that no registry can: an actor.Failure,
// as its error's text. Any other type fails with serialization.ErrUnregistered.
func appendRuntime(dst []byte, msg any) (manifest string, out []byte, err error) {
	f, ok := msg.(actor.Failure)
	if !ok {
		return "", dst, fmt.Errorf("%w: %T", serialization.ErrUnregistered, msg)
	}
	text := "nil error"
	if f.Err != nil {
		text = f.Err.Error()
	}
	if len(text) > maxStringLen {
		text = text[:maxStringLen]
	}
	return manifestFailure, append(dst, text...), nil
}

// isRuntimeManifest reports whether a manifest names one of the runtime's messages.
func isRuntimeManifest(m string) bool { return strings.HasPrefix(m, runtimePrefix) }

// decodeRuntime decodes what appendRuntime encodes.
func decodeRuntime(manifest string, payload []byte, _ serialization.RefResolver) (any, error) {
	if manifest != manifestFailure {
		return nil, fmt.Errorf("%w: %q", serialization.ErrUnknownManifest, manifest)
	}
	if len(payload) > maxStringLen {
		return nil, fmt.Errorf("%w: failure text of %d bytes", serialization.ErrDecode, len(payload))
	}
	return actor.Failure{Err: &remoteFailure{text: string(payload)}}, nil
}
