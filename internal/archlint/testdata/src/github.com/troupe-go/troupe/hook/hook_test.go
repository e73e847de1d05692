package hook

import "testing"

func TestHook(t *testing.T) {
	override = 3
	c := Config{onSend: func() {}, size: 2, Timeout: 1}
	c.internal = true
	c.nonce[0] = 1
	_ = c
}
