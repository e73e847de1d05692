package management

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// writes guards a route that changes the cluster: 403 while Config.EnableWrites is
// off, 401 without the bearer token (or with another), compared in constant time.
func (m *Management) writes(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !m.cfg.EnableWrites {
			writeError(w, http.StatusForbidden, "the routes that change the cluster are disabled (Config.EnableWrites)")
			return
		}
		if !m.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="troupe-management"`)
			writeError(w, http.StatusUnauthorized, "a valid bearer token is required")
			return
		}
		next(w, r)
	}
}

// authorized reports whether r carries "Authorization: Bearer <Config.Token>".
func (m *Management) authorized(r *http.Request) bool {
	const prefix = "bearer "
	h := r.Header.Get("Authorization")
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := strings.TrimSpace(h[len(prefix):])
	return subtle.ConstantTimeCompare([]byte(got), []byte(m.cfg.Token)) == 1
}
