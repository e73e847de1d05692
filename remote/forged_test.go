package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

type fpPing struct{ N int }
type fpPong struct{ N int }

// Frames whose senders name thousands of made-up systems cost the receiver a bounded
// number of peers, goroutines and log lines, however its actors answer them.
func TestForgedSenderAddressesCostLittle(t *testing.T) {
	const forged = 5000
	reg := serialization.NewRegistry()
	_ = serialization.Register[*fpPing](reg, "test.FpPing")
	_ = serialization.Register[*fpPong](reg, "test.FpPong")
	fake := startFakePeer(t) // a system that answers handshakes at its address
	core, logs := observer.New(zapcore.InfoLevel)
	sys, err := actor.New("b", actor.Config{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	r, err := Start(sys, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*fpPing); ok {
			_ = ctx.Respond(&fpPong{N: m.N})
		}
	}), "echo"); err != nil {
		t.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()

	conn, err := net.Dial("tcp", r.Address().HostPort())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	if err := rawHandshake(conn, br, fake.addr, 777, r.self); err != nil {
		t.Fatal(err)
	}
	_, payload, _ := reg.Marshal(&fpPing{N: 1})
	var out []byte
	for i := range forged {
		sender := "troupe://x" + strconv.Itoa(i) + "@127.0.0.1:" + strconv.Itoa(1+i%1000) + "/user/y"
		out = rawUser(out, i == 0, sender, payload)
	}
	out = appendControl(out, kindHeartbeat, 0)
	if _, err := conn.Write(out); err != nil {
		t.Fatal(err)
	}
	// The heartbeat's answer comes after every frame before it was handled.
	fr := frameReader{br: br, max: maxHandshakeFrame}
	if _, err := fr.next(); err != nil {
		t.Fatalf("no answer to the heartbeat: %v", err)
	}
	// And the echo has answered all it got once it answers a local ask.
	echo, _ := sys.Resolve("/user/echo")
	if _, err := actor.Ask[*fpPong](t.Context(), echo, &fpPing{N: -1}); err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	peers := len(r.peers)
	r.mu.Unlock()
	grown := runtime.NumGoroutine() - goroutines
	st := r.Stats()
	st.Peers = nil
	t.Logf("peers %d, goroutines +%d, log lines %d, stats %+v", peers, grown, logs.Len(), st)
	if peers > 300 {
		t.Errorf("%d peers", peers)
	}
	if grown > 300 {
		t.Errorf("%d more goroutines", grown)
	}
	if logs.Len() > 300 {
		t.Errorf("%d log lines", logs.Len())
	}
}

// rawHandshake runs a dialler's handshake on the user lane without a secret.
func rawHandshake(conn net.Conn, br *bufio.Reader, from string, uid uint64, to string) error {
	if _, err := conn.Write(appendHello(nil, hello{version: protocolVersion, lane: laneUser, from: from, fromUID: uid, to: to})); err != nil {
		return err
	}
	fr := frameReader{br: br, max: maxHandshakeFrame}
	body, err := fr.next()
	if err != nil {
		return err
	}
	if _, err := parseWelcome(body); err != nil {
		return err
	}
	_, err = conn.Write(appendProof(nil, nil))
	return err
}

// rawUser appends a user frame for /user/echo of type test.FpPing, whose sender is a
// literal that defines no entry. The first frame defines the recipient and the type
// as entries 0 and 1; the others refer to them.
func rawUser(dst []byte, first bool, sender string, payload []byte) []byte {
	dst, start := beginFrame(dst, kindUser)
	if first {
		dst = appendString(binary.AppendUvarint(dst, 1), "/user/echo")
	} else {
		dst = binary.AppendUvarint(dst, 2)
	}
	dst = appendLiteralForTest(dst, sender)
	if first {
		dst = appendString(binary.AppendUvarint(dst, 3), "test.FpPing")
	} else {
		dst = binary.AppendUvarint(dst, 4)
	}
	dst = append(dst, payload...)
	endFrame(dst, start)
	return dst
}
