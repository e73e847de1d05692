package remote_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

// A flush on a user lane that the peer keeps full is answered at once, not when the
// read buffer next runs empty, which may be never while the peer streams: a death
// notice would wait out DeathNoticeFlushTimeout under load.
func TestAFlushIsAnsweredDuringAStream(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, a.sys)
	probe.Send(a.remoteRef(t, echo), &ping{N: 1}) // b knows a's incarnation: no check of the claim below
	testkit.ExpectMsgType[*pong](probe)

	// A connection that speaks for a: a stream of frames for an actor that does not
	// exist (dead letters at b), of a size that never fills the read buffer evenly.
	c, err := net.Dial("tcp", b.r.Address().HostPort())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, br, err := remote.HandshakeForTest(c, a.r.Address().String(), a.r.UID(), b.r.Address().String())
	if err != nil {
		t.Fatal(err)
	}
	frame := remote.AppendUserForTest(nil, "/user/nobody", "", "test.Unknown", make([]byte, 2001))
	var chunk []byte
	for len(chunk) < 1<<20 {
		chunk = append(chunk, frame...)
	}
	flushed, streamed := make(chan time.Time, 1), make(chan time.Time, 1)
	go func() {
		for range 4 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		if _, err := c.Write(remote.AppendFlushForTest(nil, 7)); err != nil {
			return
		}
		flushed <- time.Now()
		for end := time.Now().Add(testkit.Dilated(4 * time.Second)); time.Now().Before(end); {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		streamed <- time.Now()
	}()
	_ = c.SetReadDeadline(time.Now().Add(testkit.Dilated(15 * time.Second)))
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(br, make([]byte, binary.BigEndian.Uint32(hdr[:]))); err != nil {
		t.Fatal(err)
	}
	answered, sent := time.Now(), <-flushed
	select {
	case end := <-streamed:
		t.Errorf("the flush was answered %v after the stream ended, %v after it was sent", answered.Sub(end), answered.Sub(sent))
	default:
	}
}
