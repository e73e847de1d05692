package remote

import (
	"bufio"
	"bytes"
	"strconv"
	"testing"
)

// FuzzFrames feeds arbitrary bytes to the frame reader and every body parser, as an
// inbound connection would after its handshake: no input may panic, and memory stays
// bounded by the maximum frame size.
func FuzzFrames(f *testing.F) {
	var dict encDict
	user, start := beginFrame(nil, kindUser)
	dict.startFrame()
	user = dict.appendStr(user, "/user/a#42")
	user = append(user, 0)
	user = dict.appendStr(user, "test.Ping")
	user = append(user, 0x80)
	endFrame(user, start)
	again, start := beginFrame(nil, kindUser)
	dict.startFrame()
	again = dict.appendStr(again, "/user/a#42")
	again = append(again, 0)
	again = dict.appendStr(again, "test.Ping")
	endFrame(again, start)
	f.Add(append(user, again...))
	f.Add(appendSystem(nil, 1, sysMessage{op: opWatch, target: "/user/a#1", other: "troupe://b@127.0.0.1:1/user/w#2"}))
	f.Add(appendControl(appendControl(nil, kindAck, 7), kindHeartbeatRsp, 9))
	f.Add(appendControl(nil, kindHeartbeat, 0))
	f.Add(appendControl(appendControl(nil, kindFlush, 3), kindFlushAck, 3))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frameReader{br: bufio.NewReaderSize(bytes.NewReader(data), 4096), max: 64 << 10}
		var dd decDict
		for {
			body, err := fr.next()
			if err != nil {
				return
			}
			if len(body) > 64<<10 {
				t.Fatalf("frame of %d bytes passed a 64 KiB limit", len(body))
			}
			switch body[0] {
			case kindUser:
				h, err := parseUser(body, &dd)
				if err == nil && (h.rcpt == nil || h.manifest == nil) {
					t.Fatal("user frame accepted without recipient or manifest")
				}
			case kindSystem:
				_, _, _ = parseSystem(body)
			default:
				_, _, _ = parseControl(body)
			}
			if len(dd.e) > dictSize {
				t.Fatalf("dictionary grew to %d entries", len(dd.e))
			}
		}
	})
}

// FuzzHandshake feeds arbitrary bodies to the handshake parsers.
func FuzzHandshake(f *testing.F) {
	var nonce [nonceLen]byte
	f.Add(appendHello(nil, hello{version: protocolVersion, lane: laneSystem, from: "troupe://a@127.0.0.1:1", fromUID: 5, to: "troupe://b@127.0.0.1:2", nonce: nonce})[frameHeaderLen:])
	f.Add(appendWelcome(nil, welcome{version: protocolVersion, addr: "troupe://b@127.0.0.1:2", uid: 6, mac: handshakeMAC([]byte("k"), roleAcceptor, nonce, 6)})[frameHeaderLen:])
	f.Add(appendProof(nil, handshakeMAC([]byte("k"), roleDialer, nonce, 5))[frameHeaderLen:])
	f.Add(appendReject(nil, "no\x00way")[frameHeaderLen:])
	f.Fuzz(func(t *testing.T, body []byte) {
		if h, err := parseHello(body); err == nil {
			if len(h.from) > maxStringLen || len(h.to) > maxStringLen {
				t.Fatal("oversized address accepted")
			}
		}
		if w, err := parseWelcome(body); err == nil && len(w.mac) > 32 {
			t.Fatal("oversized mac accepted")
		}
		_, _ = parseProof(body)
		if got := sanitize(string(body)); len(got) > 200 {
			t.Fatal("sanitize kept too much")
		}
	})
}

// FuzzDictionary round-trips user frames through the writer's and the reader's halves
// of the dictionary, as a lane does, with broken connections in between: every frame
// arrives with its own recipient, sender and type, in order, or is counted lost where
// a connection broke inside it. The input is a program: each byte pair either sends a
// frame with names drawn from far more than the dictionary holds, or takes, writes,
// cuts or breaks; some sends are preceded by a flush frame, which defines nothing and
// is not a message. The first byte picks the dictionary's size. The seed corpus in
// testdata/fuzz/FuzzDictionary has programs of 3,000 distinct-ish names for each size
// (more than the largest dictionary holds), with takes, writes, cuts and breaks.
func FuzzDictionary(f *testing.F) {
	f.Fuzz(runDictionaryProgram)
}

func runDictionaryProgram(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	sizes := [...]uint32{4, 5, 16, 64, dictSize}
	p := newPipe(t, sizes[int(data[0])%len(sizes)])
	data = data[1:]
	for len(data) >= 2 {
		op, arg := data[0], int(data[1])
		data = data[2:]
		switch {
		case op < 200: // send: names from a pool of about 4,600
			n := int(op)<<8 | arg
			if n%17 == 0 {
				p.q.addFlush(uint64(n)) // a death notice waits (deathgate.go)
			}
			p.send("/user/r"+strconv.Itoa(n%4099)+"#"+strconv.Itoa(n%7),
				fuzzSender(n), "m"+strconv.Itoa(n%13), n%11 == 0)
		case op < 220:
			if p.batch == nil {
				p.take()
			}
		case op < 240:
			if p.batch != nil {
				p.write()
			}
		case op < 250:
			if p.batch != nil {
				p.cut(arg * len(p.batch) / 256)
			}
		default:
			p.idleBreak()
		}
	}
	p.finish()
}

func fuzzSender(n int) string {
	if n%5 == 0 {
		return ""
	}
	return "troupe://a@127.0.0.1:1/user/s" + strconv.Itoa(n%1549)
}
