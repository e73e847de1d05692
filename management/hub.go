package management

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
)

// The hub hands each event to every open event stream that wants it, without ever
// waiting for one: a stream whose buffer is full loses the event and is closed.

var (
	// errTooManyStreams refuses a stream beyond MaxEventStreams.
	errTooManyStreams = errors.New("too many event streams are open")
	// errHubClosed refuses a stream once the server stops.
	errHubClosed = errors.New("the management server is stopping")
)

// stream is one client's event stream.
type stream struct {
	types map[string]bool // the wanted event types; nil for all
	ch    chan []byte     // framed server-sent events
	gone  chan struct{}   // closed when the stream must end
	once  sync.Once
	// slow is set when the stream was closed because its client did not keep up.
	slow atomic.Bool
}

// end closes the stream's gone channel once.
func (s *stream) end() { s.once.Do(func() { close(s.gone) }) }

type hub struct {
	max, buf int

	mu      sync.Mutex
	streams map[*stream]struct{}
	closed  bool
	nextID  uint64

	dropped, slowClosed, refused atomic.Uint64
}

func newHub(maxStreams, buf int) *hub {
	return &hub{max: maxStreams, buf: buf, streams: map[*stream]struct{}{}}
}

// open registers a stream for the types (nil or empty: every type).
func (h *hub) open(types map[string]bool) (*stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errHubClosed
	}
	if len(h.streams) >= h.max {
		h.refused.Add(1)
		return nil, errTooManyStreams
	}
	if len(types) == 0 {
		types = nil
	}
	s := &stream{types: types, ch: make(chan []byte, h.buf), gone: make(chan struct{})}
	h.streams[s] = struct{}{}
	return s, nil
}

// close unregisters a stream and ends it.
func (h *hub) close(s *stream) {
	h.mu.Lock()
	delete(h.streams, s)
	h.mu.Unlock()
	s.end()
}

// closeSlow ends a stream whose client did not keep up, and counts it.
func (h *hub) closeSlow(s *stream) {
	h.mu.Lock()
	delete(h.streams, s)
	if s.slow.CompareAndSwap(false, true) {
		h.slowClosed.Add(1)
	}
	h.mu.Unlock()
	s.end()
}

// publish frames ev once and offers it to every stream that wants it; a stream whose
// buffer is full loses it (counted) and is closed.
func (h *hub) publish(ev Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		return // every Event encodes; nothing to send otherwise
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.streams) == 0 {
		return
	}
	h.nextID++
	frame := sseFrame(h.nextID, ev.Type, data)
	for s := range h.streams {
		if s.types != nil && !s.types[ev.Type] {
			continue
		}
		select {
		case s.ch <- frame:
		default:
			h.dropped.Add(1)
			if s.slow.CompareAndSwap(false, true) {
				h.slowClosed.Add(1)
			}
			delete(h.streams, s)
			s.end()
		}
	}
}

// sseFrame returns one server-sent event.
func sseFrame(id uint64, typ string, data []byte) []byte {
	b := make([]byte, 0, len(data)+len(typ)+40)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, "\nevent: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// shutdown ends every stream and refuses new ones.
func (h *hub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.streams {
		delete(h.streams, s)
		s.end()
	}
}

func (h *hub) stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{EventStreams: len(h.streams), EventsDropped: h.dropped.Load(), SlowStreamsClosed: h.slowClosed.Load(),
		StreamsRefused: h.refused.Load()}
}
