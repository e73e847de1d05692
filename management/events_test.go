package management_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/sharding"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// TestSlowEventClientsNeverHoldAnythingUp opens an event stream that never reads, and
// floods the node with events: the server keeps answering, the slow stream is closed
// and counted, a stream that reads is left alone, and the bound on open streams
// refuses one too many and frees the slow one's place.
func TestSlowEventClientsNeverHoldAnythingUp(t *testing.T) {
	mc := multinode.Start(t, multinode.Options{Nodes: 1})
	sys := mc.Node(0).System
	m, err := management.Start(sys, management.Config{Address: "127.0.0.1:0", MaxEventStreams: 2, EventBuffer: 8,
		WriteTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t)

	// The client that never reads, once its stream is open.
	conn, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(conn, "GET /cluster/events HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(testkit.Dilated(10 * time.Second)))
	raw := bufio.NewReader(conn)
	for {
		line, err := raw.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the slow stream's opening: %v", err)
		}
		if strings.Contains(line, "stream open") {
			break
		}
	}

	// A client that reads, and wants only member-up events.
	reader := openEvents(t, c, m.URL()+"/cluster/events?type=member-up")
	// The bound: a third stream is refused.
	getJSON(t, c, m.URL()+"/cluster/events", 503, nil)
	if st := m.Stats(); st.EventStreams != 2 || st.StreamsRefused != 1 {
		t.Fatalf("stats %+v", st)
	}

	// Flood until the slow stream is closed; the server answers meanwhile.
	for round := 0; m.Stats().SlowStreamsClosed == 0; round++ {
		if round == 2000 {
			t.Fatalf("the slow stream was never closed: %+v", m.Stats())
		}
		for i := range 500 {
			sys.EventStream().Publish(sharding.ShardAllocated{TypeName: "Flood", Shard: sharding.ShardID(fmt.Sprint(i)),
				To: actor.Address{System: "x", Host: "127.0.0.1", Port: 1}})
		}
		getJSON(t, c, m.URL()+"/alive", 200, nil)
	}
	if st := m.Stats(); st.EventStreams != 1 || st.SlowStreamsClosed != 1 {
		t.Fatalf("after the slow stream closed: %+v", st)
	}
	select {
	case <-reader.done:
		t.Fatal("the stream that reads (and filters the flood out) was closed")
	default:
	}
	// Its place is free again.
	openEvents(t, c, m.URL()+"/cluster/events?type=member-removed")

	// The slow client finds its stream ended, once it reads what was sent.
	_ = conn.SetReadDeadline(time.Now().Add(testkit.Dilated(20 * time.Second)))
	tail := make([]byte, 0, 16)
	buf := make([]byte, 64<<10)
	for {
		n, err := raw.Read(buf)
		tail = append(tail, buf[:n]...)
		if len(tail) > 16 {
			tail = tail[len(tail)-16:]
		}
		if bytes.HasSuffix(tail, []byte("\r\n0\r\n\r\n")) || err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the slow stream did not end: %v", err)
		}
	}
}
