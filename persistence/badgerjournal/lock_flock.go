//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package badgerjournal

import (
	"errors"
	"os"
	"syscall"
)

// probeLock reports ErrLocked when another open database holds dir's lock.
// Badger takes an exclusive flock on the directory; probeLock tries to take
// the same lock without blocking and releases it at once, so badger can take
// it next. Badger's own failure remains the authority (see isLockError):
// this probe only makes the common case independent of badger's message.
func probeLock(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return nil // badger will report it
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return ErrLocked
		}
		return nil
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
