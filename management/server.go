package management

import (
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"

	"go.uber.org/zap"
)

// errNoHostPort is the error of a member address without a host or port.
var errNoHostPort = errors.New("a member's address needs a host and a port")

// routes returns the server's handler: every route and the live cluster page (page.go),
// behind the body limit and the recovery from a panic. Anything else is a JSON 404.
func (m *Management) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /alive", m.handleAlive)
	mux.HandleFunc("GET /ready", m.handleReady)
	mux.HandleFunc("GET /cluster/members", m.handleMembers)
	mux.HandleFunc("GET /cluster/members/{address}", m.handleMember)
	mux.HandleFunc("PUT /cluster/members/{address}", m.writes(m.handleMemberOperation))
	mux.HandleFunc("DELETE /cluster/members/{address}", m.writes(m.handleMemberLeave))
	mux.HandleFunc("GET /cluster/shards", m.handleEntityTypes)
	mux.HandleFunc("GET /cluster/shards/{type}", m.handleRegion)
	mux.HandleFunc("GET /cluster/shards/{type}/stats", m.handleClusterShards)
	mux.HandleFunc("GET /cluster/singletons", m.handleSingletons)
	mux.HandleFunc("GET /cluster/events", m.handleEvents)
	mux.HandleFunc("GET /metrics", m.handleMetrics)
	mux.HandleFunc("GET /config", m.handleConfig)
	mux.HandleFunc("GET /{$}", m.handlePage)
	mux.HandleFunc("GET /page/{file}", m.handlePageFile)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path)
	})
	return m.guard(mux)
}

// guard limits the request body to MaxBodyBytes and turns a panic in a handler into a
// 500 and a log line: a bad request must never take the node down.
func (m *Management) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p) // net/http's own way to abort a response
				}
				m.log.Error("management: a handler panicked", zap.Any("panic", p), zap.String("path", r.URL.Path),
					zap.ByteString("stack", debug.Stack()))
				writeError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		if r.ContentLength > m.cfg.MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, "the request body is too large")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, m.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// errorView is the body of every error answer.
type errorView struct {
	Error string `json:"error"`
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// writeError answers an error as JSON with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorView{Error: msg})
}

// handleMetrics serves GET /metrics through Config.Metrics.
func (m *Management) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if m.cfg.Metrics == nil {
		writeError(w, http.StatusNotFound, "no metrics handler is configured (Config.Metrics)")
		return
	}
	m.cfg.Metrics.ServeHTTP(w, r)
}
