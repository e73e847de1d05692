package management

import (
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// keepAliveInterval is how often an idle event stream gets a comment line, so that
// proxies keep it open and a client that went away is noticed.
const keepAliveInterval = 15 * time.Second

// parseTypes reads the type filter of GET /cluster/events: type=a,b or type=a&type=b.
// It returns nil for no filter and an error naming an unknown type.
func parseTypes(values []string) (map[string]bool, error) {
	known := EventTypes()
	var out map[string]bool
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			if !slices.Contains(known, t) {
				return nil, errors.New("unknown event type " + t + ": use one of " + strings.Join(known, ", "))
			}
			if out == nil {
				out = map[string]bool{}
			}
			out[t] = true
		}
	}
	return out, nil
}

// handleEvents answers GET /cluster/events with a stream of server-sent events.
func (m *Management) handleEvents(w http.ResponseWriter, r *http.Request) {
	types, err := parseTypes(r.URL.Query()["type"])
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s, err := m.hub.open(types)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	defer m.hub.close(s)
	m.watchSingletons()
	rc := http.NewResponseController(w)
	// The stream reads nothing more; its writes get the WriteTimeout one by one.
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(m.cfg.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if write([]byte(": stream open\n\n")) != nil {
		return
	}
	tick := time.NewTicker(keepAliveInterval)
	defer tick.Stop()
	for {
		select {
		case frame := <-s.ch:
			if err := write(frame); err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					return // the client went away
				}
				m.hub.closeSlow(s)
				m.log.Warn("management: an event stream's client did not take an event in time; stream closed",
					zap.String("client", r.RemoteAddr), zap.Duration("write-timeout", m.cfg.WriteTimeout))
				return
			}
		case <-tick.C:
			if write([]byte(": keep-alive\n\n")) != nil {
				return
			}
		case <-s.gone:
			if s.slow.Load() {
				m.log.Warn("management: an event stream's client fell behind; stream closed",
					zap.String("client", r.RemoteAddr), zap.Int("buffer", m.cfg.EventBuffer))
			}
			return
		case <-r.Context().Done():
			return
		}
	}
}
