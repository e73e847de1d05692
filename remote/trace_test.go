package remote

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
)

// testSpanContext returns a valid span context made from n, with a tracestate when
// withState.
func testSpanContext(n int, withState bool) *trace.SpanContext {
	var cfg trace.SpanContextConfig
	binary.BigEndian.PutUint64(cfg.TraceID[8:], uint64(n)+1)
	binary.BigEndian.PutUint64(cfg.SpanID[:], uint64(n)+7)
	cfg.TraceFlags = trace.FlagsSampled
	if withState {
		ts, err := trace.ParseTraceState("vendor=v" + string(rune('a'+n%26)))
		if err != nil {
			panic(err)
		}
		cfg.TraceState = ts
	}
	sc := trace.NewSpanContext(cfg)
	return &sc
}

// A traced frame carries its context whole; a short one, or one with a zero id, is
// malformed; a tracestate that does not parse is dropped and the message kept.
func TestTracedFrames(t *testing.T) {
	var q userQueue
	sc := testSpanContext(3, true)
	q.add("/user/a", actor.Ref{}, "m", []byte("payload"), sc)
	q.add("/user/a", actor.Ref{}, "m", []byte("plain"), nil)
	var bodies [][]byte
	eachFrame(q.buf, func(body []byte) { bodies = append(bodies, append([]byte(nil), body...)) })
	if len(bodies) != 2 || bodies[0][0] != kindTraced || bodies[1][0] != kindUser {
		t.Fatalf("frames of kinds %v", bodies)
	}
	var dict decDict
	dict.size = 64
	h, err := parseUser(bodies[0], &dict)
	if err != nil || !h.trace.Equal(sc.WithRemote(true)) || string(h.payload) != "payload" {
		t.Fatalf("traced frame read as %+v (trace %v), %v", h, h.trace, err)
	}
	if h, err := parseUser(bodies[1], &dict); err != nil || h.trace.IsValid() || string(h.payload) != "plain" {
		t.Fatalf("plain frame read as %+v, %v", h, err)
	}

	for name, body := range map[string][]byte{
		"short":    bodies[0][:tracewire.MinLen],
		"zero ids": append([]byte{kindTraced}, make([]byte, tracewire.MinLen)...),
	} {
		if _, err := parseUser(body, &decDict{size: 64}); !errors.Is(err, errMalformed) {
			t.Errorf("%s: %v, want malformed", name, err)
		}
	}

	bad := append([]byte{kindTraced}, bodies[0][1:26]...)
	bad = appendString(bad, "not a=tracestate!")
	bad = append(bad, bodies[0][1+25+1+len(sc.TraceState().String()):]...)
	h, err = parseUser(bad, &decDict{size: 64})
	if err != nil || !h.trace.IsValid() || h.trace.TraceState().Len() != 0 {
		t.Fatalf("a bad tracestate: %v, trace %v", err, h.trace)
	}
}
