package discovery

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeAPI is a Kubernetes API server for the tests: HTTPS with httptest's
// certificate, a bearer token check, and GET /api/v1/namespaces/{ns}/pods with an
// equality label selector. It can be told to fail, stopped, and started again on the
// same address.
type fakeAPI struct {
	t    *testing.T
	addr string
	srv  *httptest.Server

	// The files a pod's service account provides, in a temporary directory.
	dir string

	mu       sync.Mutex
	token    string
	pods     map[string][]testPod // by namespace
	failWith int                  // a status to answer every request with; 0: none
	body     string               // an answer to give as it is, with 200; "": none
	requests []*http.Request
}

// testPod describes one pod of the fake API's list.
type testPod struct {
	name, phase, ip string
	labels          map[string]string
	deleting        bool
	ports           [][2]any // {name, port} of the main container
	sidecarPorts    [][2]any // {name, port} in a container listed before the main one
}

func (p testPod) json() map[string]any {
	ports := func(ps [][2]any) []any {
		var out []any
		for _, x := range ps {
			out = append(out, map[string]any{"name": x[0], "containerPort": x[1], "protocol": "TCP"})
		}
		return out
	}
	containers := []any{}
	if p.sidecarPorts != nil {
		containers = append(containers, map[string]any{"name": "sidecar", "ports": ports(p.sidecarPorts)})
	}
	containers = append(containers, map[string]any{"name": "node", "ports": ports(p.ports)})
	meta := map[string]any{"name": p.name, "labels": p.labels, "uid": "u-" + p.name}
	if p.deleting {
		meta["deletionTimestamp"] = "2026-11-29T12:00:00Z"
	}
	status := map[string]any{"phase": p.phase}
	if p.ip != "" {
		status["podIP"] = p.ip
		status["podIPs"] = []any{map[string]any{"ip": p.ip}}
	}
	return map[string]any{"metadata": meta, "spec": map[string]any{"containers": containers}, "status": status}
}

func startAPI(t *testing.T) *fakeAPI {
	t.Helper()
	a := &fakeAPI{t: t, addr: "127.0.0.1:0", dir: t.TempDir(), token: "token-1", pods: map[string][]testPod{}}
	a.writeFile("token", "token-1\n")
	a.writeFile("namespace", "demo\n")
	a.start()
	a.writeFile("ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})))
	t.Cleanup(a.stop)
	return a
}

func (a *fakeAPI) writeFile(name, content string) {
	a.t.Helper()
	if err := os.WriteFile(filepath.Join(a.dir, name), []byte(content), 0o600); err != nil {
		a.t.Fatal(err)
	}
}

// client returns a Kubernetes that reaches this server with the service account's
// files in a.dir.
func (a *fakeAPI) client() Kubernetes {
	return Kubernetes{
		APIServer:     "https://" + a.addr,
		TokenFile:     filepath.Join(a.dir, "token"),
		CAFile:        filepath.Join(a.dir, "ca.crt"),
		NamespaceFile: filepath.Join(a.dir, "namespace"),
	}
}

func (a *fakeAPI) start() {
	a.t.Helper()
	l, err := net.Listen("tcp", a.addr)
	if err != nil {
		a.t.Fatalf("fake API server: %v", err)
	}
	a.addr = l.Addr().String()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	srv.Listener.Close()
	srv.Listener = l
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-CA case ends handshakes
	srv.StartTLS()
	a.srv = srv
}

func (a *fakeAPI) stop() {
	if a.srv != nil {
		a.srv.Close()
		a.srv = nil
	}
}

func (a *fakeAPI) set(f func(a *fakeAPI)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

func (a *fakeAPI) lastRequest() *http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.requests) == 0 {
		return nil
	}
	return a.requests[len(a.requests)-1]
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "reason": reason, "code": code,
	})
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, r)
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	if a.failWith != 0 {
		writeStatus(w, a.failWith, "InternalError", "etcdserver: request timed out")
		return
	}
	if a.body != "" {
		_, _ = w.Write([]byte(a.body))
		return
	}
	parts := strings.Split(r.URL.Path, "/")
	if r.Method != http.MethodGet || len(parts) != 6 || parts[1] != "api" || parts[2] != "v1" ||
		parts[3] != "namespaces" || parts[5] != "pods" {
		writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	var items []any
	for _, p := range a.pods[parts[4]] {
		if selects(r.URL.Query().Get("labelSelector"), p.labels) {
			items = append(items, p.json())
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "PodList", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "7"}, "items": items,
	})
}

// selects reports whether a selector of k=v terms, comma-separated, matches labels.
func selects(selector string, labels map[string]string) bool {
	for _, term := range strings.Split(selector, ",") {
		k, v, ok := strings.Cut(term, "=")
		if !ok || labels[k] != v {
			return false
		}
	}
	return true
}

func (p testPod) String() string { return fmt.Sprintf("%s(%s %s)", p.name, p.phase, p.ip) }
