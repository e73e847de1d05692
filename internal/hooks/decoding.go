package hooks

import "github.com/troupe-go/troupe/actor"

// ReceivingSystem is implemented by the decoder context (serialization.DecoderContext)
// under which a transport decodes what arrives for a system: it names that system. A
// batch of messages decoding on the transport's reader can so find the extension it is
// for, and decode its messages there, off the recipient's goroutine, as plain remote
// messages are.
type ReceivingSystem interface {
	ReceivingSystem() *actor.System
}
