package management

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

// The live cluster page: a few static files embedded in the binary (no build step, no
// CDN), served at / and /page/. The page reads the same routes as any client (it is
// given no secret): GET /config tells it whether to show the Leave and Down buttons,
// and it asks the operator for the bearer token when one is pressed.

//go:embed page
var pageFiles embed.FS

// pageTypes are the content types of the page's files, by extension.
var pageTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// pageCSP is the page's Content-Security-Policy: its own scripts, styles and routes,
// nothing inline, nothing from elsewhere, never in a frame.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ConfigView answers GET /config: what the page (or another client) needs to know of
// the server's configuration. It never holds the token.
type ConfigView struct {
	// SelfNode is the address of the member that answered.
	SelfNode string `json:"selfNode"`
	// WritesEnabled is Config.EnableWrites: the routes that change the cluster are on
	// (they need the bearer token).
	WritesEnabled bool `json:"writesEnabled"`
	// EventTypes lists the event types of GET /cluster/events.
	EventTypes []string `json:"eventTypes"`
}

// handleConfig answers GET /config.
func (m *Management) handleConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, ConfigView{SelfNode: m.selfNode(), WritesEnabled: m.cfg.EnableWrites, EventTypes: EventTypes()})
}

// handlePage answers GET /: the page itself.
func (m *Management) handlePage(w http.ResponseWriter, _ *http.Request) {
	servePageFile(w, "index.html")
}

// handlePageFile answers GET /page/{file}: a script or style sheet of the page; 404
// (as JSON, like every unknown route) for anything else.
func (m *Management) handlePageFile(w http.ResponseWriter, r *http.Request) {
	servePageFile(w, r.PathValue("file"))
}

// servePageFile writes the embedded page file name, or a 404.
func servePageFile(w http.ResponseWriter, name string) {
	ctype, known := pageTypes[path.Ext(name)]
	body, err := fs.ReadFile(pageFiles, "page/"+name)
	if !known || err != nil {
		writeError(w, http.StatusNotFound, "no such file: /page/"+name)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
