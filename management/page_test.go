package management_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/testkit"
)

// TestPageIsServed checks how the live cluster page is served, without a browser: /
// and its two files with their content types and a Content-Security-Policy, a JSON
// 404 for any other file or path, GET /config telling whether writes are enabled,
// and the token in none of them.
func TestPageIsServed(t *testing.T) {
	for _, writes := range []bool{false, true} {
		sys := testkit.NewSystem(t)
		cfg := management.Config{Address: "127.0.0.1:0"}
		if writes {
			cfg.EnableWrites, cfg.Token = true, token
		}
		m, err := management.Start(sys, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := client(t)
		files := []struct{ path, ctype, contains string }{
			{"/", "text/html; charset=utf-8", `<script src="page/app.js" defer></script>`},
			{"/page/app.js", "text/javascript; charset=utf-8", `new EventSource("cluster/events")`},
			{"/page/style.css", "text/css; charset=utf-8", ".bars"},
		}
		for _, f := range files {
			resp, err := c.Get(m.URL() + f.path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			body := string(b)
			h := resp.Header
			if resp.StatusCode != 200 || h.Get("Content-Type") != f.ctype || !strings.Contains(body, f.contains) {
				t.Fatalf("GET %s: %d %q, want %s with %q", f.path, resp.StatusCode, h.Get("Content-Type"), f.ctype, f.contains)
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("GET %s: security headers %v", f.path, h)
			}
			if strings.Contains(body, token) {
				t.Fatalf("GET %s holds the token", f.path)
			}
		}
		for _, p := range []string{"/page/nope.js", "/page/", "/page/app.txt", "/index.html", "/nope"} {
			status, body := do(t, c, http.MethodGet, m.URL()+p, nil, nil)
			var e struct{ Error string }
			if status != 404 || json.Unmarshal(body, &e) != nil || e.Error == "" {
				t.Fatalf("GET %s: %d %s, want a JSON 404", p, status, body)
			}
		}
		if status, body := do(t, c, http.MethodPost, m.URL()+"/", nil, nil); status != 404 {
			t.Fatalf("POST /: %d %s", status, body)
		}
		var v management.ConfigView
		status, body := do(t, c, http.MethodGet, m.URL()+"/config", nil, nil)
		if err := json.Unmarshal(body, &v); status != 200 || err != nil {
			t.Fatalf("GET /config: %d %s", status, body)
		}
		if v.WritesEnabled != writes || !slices.Equal(v.EventTypes, management.EventTypes()) || strings.Contains(string(body), token) {
			t.Fatalf("GET /config with writes %v: %s", writes, body)
		}
	}
}
