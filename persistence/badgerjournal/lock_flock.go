//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package badgerjournal

import (
	"errors"
	"os"
	"syscall"
)

// withDirLock runs fn holding dir's lock, and reports ErrLocked when another open
// database holds it. Badger takes an exclusive flock on the directory; withDirLock
// takes the same lock without blocking and releases it after fn, so badger can take
// it next, and so that nothing repairs files of a database another process has open.
// Badger's own failure remains the authority (see isLockError): this only makes the
// common case independent of badger's message.
func withDirLock(dir string, fn func() error) error {
	f, err := os.Open(dir)
	if err != nil {
		return fn() // badger will report it
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return ErrLocked
		}
		return fn()
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	return fn()
}
