package remote

import (
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
)

// closeRecorder is a connection that only records that it was closed.
type closeRecorder struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeRecorder) Close() error {
	c.closed.Store(true)
	return nil
}

// A lane's new connection is read only once the old one's reader has stopped: while
// that reader reads, the new one waits; once it has read nothing for takeOverWait, the
// old connection is closed. A connection older than the one read is refused.
func TestTakeOverWaitsForTheOldReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &Remote{readers: map[readerKey]*inConn{}, done: make(chan struct{}), log: zap.NewNop()}
		conn := func(seq int) *inConn {
			return &inConn{uid: 7, seq: seq, conn: &closeRecorder{}, done: make(chan struct{})}
		}
		old := conn(1)
		if !r.takeOver(old, laneUser) {
			t.Fatal("the first connection of a lane is refused")
		}
		newer := conn(2)
		result := make(chan bool, 1)
		go func() { result <- r.takeOver(newer, laneUser) }()
		for range 6 { // the old reader reads on, for 3 s
			time.Sleep(takeOverWait / 2)
			old.frames.Add(1)
		}
		synctest.Wait()
		if old.conn.(*closeRecorder).closed.Load() {
			t.Fatal("the old connection was closed while its reader still read")
		}
		select {
		case <-result:
			t.Fatal("the new connection was read before the old one ended")
		default:
		}
		time.Sleep(2 * takeOverWait) // it reads nothing more
		synctest.Wait()
		if !old.conn.(*closeRecorder).closed.Load() {
			t.Fatal("an old connection that reads nothing was not closed")
		}
		close(old.done)
		if !<-result {
			t.Fatal("the new connection was refused")
		}
		stale := make(chan bool, 1)
		go func() { stale <- r.takeOver(conn(1), laneUser) }()
		select {
		case taken := <-stale:
			if taken {
				t.Fatal("a connection older than the one read was taken")
			}
		case <-time.After(10 * takeOverWait):
			t.Fatal("a connection older than the one read waits for it")
		}
		if !r.takeOver(conn(1), laneSystem) {
			t.Fatal("another lane's connection was refused")
		}
		r.readerDone(newer, laneUser)
		if _, ok := r.readers[readerKey{7, laneUser}]; ok {
			t.Fatal("a reader that is done is still listed")
		}
	})
}
