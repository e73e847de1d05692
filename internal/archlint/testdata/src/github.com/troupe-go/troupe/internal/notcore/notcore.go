// Package notcore is not marked as a core: it may read the clock.
package notcore

import "time"

// Now reads the clock.
func Now() time.Time {
	go func() {}()
	return time.Now()
}
