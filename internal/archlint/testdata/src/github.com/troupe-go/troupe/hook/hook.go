// Package hook holds test hooks the analyzer must find, and look-alikes it must not.
package hook

var override int

var shared int // only production writes it

// Config is a public configuration.
type Config struct {
	Timeout  int // exported: users write it, not production code
	onSend   func()
	size     int // production writes it too
	nonce    [4]byte
	internal bool
}

// Reset is used only by tests.
func Reset() {}

// Store is an in-memory store for tests and single-process use.
type Store struct{}

func build(b []byte) Config {
	shared = 2
	c := Config{size: 1}
	copy(c.nonce[:], b)
	if c.onSend != nil && c.internal {
		c.onSend()
	}
	return c
}

// Use reads override.
func Use() int { return override + shared + build(nil).Timeout }
