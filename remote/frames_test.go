package remote

import (
	"testing"
)

func TestQueuedFramesAreRewrittenForANewConnection(t *testing.T) {
	var enc encDict
	var buf []byte
	for i := 0; i < 3; i++ {
		var start int
		buf, start = beginFrame(buf, kindUser)
		buf = enc.appendStr(buf, "/user/a#1")
		buf = append(buf, 0)
		buf = enc.appendStr(buf, "test.Ping")
		buf = append(buf, byte(i))
		endFrame(buf, start)
	}
	// The first frame went out on the old connection; the other two were queued.
	first := frameHeaderLen + int(buf[3])
	queued := enc.reset(append([]byte(nil), buf[first:]...))

	var dec decDict
	for i := 1; i < 3; i++ {
		n := frameHeaderLen + int(queued[3])
		h, err := parseUser(queued[frameHeaderLen:n], &dec)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if h.rcpt.s != "/user/a#1" || h.sender != nil || h.manifest.s != "test.Ping" || h.payload[0] != byte(i) {
			t.Fatalf("frame %d = %+v", i, h)
		}
		queued = queued[n:]
	}
	if len(queued) != 0 {
		t.Fatalf("%d bytes left", len(queued))
	}
}

func TestIsTempURI(t *testing.T) {
	for uri, want := range map[string]bool{
		"troupe://a@127.0.0.1:1/temp/$3#3":   true,
		"troupe://a/temp/$x":                 true,
		"troupe://a@127.0.0.1:1/user/temp/x": false,
		"troupe://a@127.0.0.1:1/user/a#5":    false,
	} {
		if got := isTempURI(uri); got != want {
			t.Errorf("isTempURI(%q) = %v", uri, got)
		}
	}
}
