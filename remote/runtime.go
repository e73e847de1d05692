package remote

import (
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

// The runtime's own messages cross the wire without the application registering
// them, under reserved manifests that start with '$' (a registered name cannot). An
// actor.Failure travels as its error's text and arrives as an actor.Failure whose
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

// runtimeTypes holds the runtime's messages that msgpack encodes as they are.
var runtimeTypes = func() *serialization.Registry {
	reg := serialization.NewRegistry()
	for _, err := range []error{
		serialization.Register[actor.PoisonPill](reg, "troupe.PoisonPill"),
		serialization.Register[actor.Kill](reg, "troupe.Kill"),
		serialization.Register[actor.Terminated](reg, "troupe.Terminated"),
		serialization.Register[actor.GetCurrentChild](reg, "troupe.GetCurrentChild"),
		serialization.Register[actor.CurrentChild](reg, "troupe.CurrentChild"),
		serialization.Register[actor.GetRestartCount](reg, "troupe.GetRestartCount"),
		serialization.Register[actor.RestartCount](reg, "troupe.RestartCount"),
	} {
		if err != nil {
			panic(err) // a programming error in this list, caught by every test
		}
	}
	return reg
}()

// runtimeManifests maps a runtime type's registered name to its reserved manifest.
var runtimeManifests = map[string]string{}

func init() {
	for _, name := range []string{"troupe.PoisonPill", "troupe.Kill", "troupe.Terminated",
		"troupe.GetCurrentChild", "troupe.CurrentChild", "troupe.GetRestartCount", "troupe.RestartCount"} {
		runtimeManifests[name] = runtimePrefix + name
	}
}

// appendRuntime encodes one of the runtime's messages; it fails with the registry's
// ErrUnregistered for any other type.
func appendRuntime(dst []byte, msg any) (manifest string, out []byte, err error) {
	if f, ok := msg.(actor.Failure); ok {
		text := "nil error"
		if f.Err != nil {
			text = f.Err.Error()
		}
		if len(text) > maxStringLen {
			text = text[:maxStringLen]
		}
		return manifestFailure, append(dst, text...), nil
	}
	name, out, err := runtimeTypes.AppendMarshal(dst, msg, nil)
	if err != nil {
		return "", dst, err
	}
	return runtimeManifests[name], out, nil
}

// isRuntimeManifest reports whether a manifest names one of the runtime's messages.
func isRuntimeManifest(m string) bool { return strings.HasPrefix(m, runtimePrefix) }

// decodeRuntime decodes one of the runtime's messages; refs inside resolve through
// resolver.
func decodeRuntime(manifest string, payload []byte, resolver serialization.RefResolver) (any, error) {
	if manifest == manifestFailure {
		if len(payload) > maxStringLen {
			return nil, fmt.Errorf("%w: failure text of %d bytes", serialization.ErrDecode, len(payload))
		}
		return actor.Failure{Err: &remoteFailure{text: string(payload)}}, nil
	}
	return runtimeTypes.UnmarshalContext(strings.TrimPrefix(manifest, runtimePrefix), payload, resolver)
}
