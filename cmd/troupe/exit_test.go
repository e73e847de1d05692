package main

import (
	"bytes"
	"context"
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
	"time"

	"github.com/troupe-go/troupe/testkit"
)

// The exit codes and messages, against a stand-in server with canned answers.

// result is what one run of troupe did.
type result struct {
	code   int
	stdout string
	stderr string
}

// runCLI runs troupe with args and returns what it did.
func runCLI(ctx context.Context, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// expect checks a run's exit code, and that its stderr contains each of msgs.
func (r result) expect(t *testing.T, what string, code int, msgs ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: exit code %d, want %d\nstdout: %s\nstderr: %s", what, r.code, code, r.stdout, r.stderr)
		return
	}
	for _, m := range msgs {
		if !strings.Contains(r.stderr, m) {
			t.Errorf("%s: stderr %q does not say %q", what, r.stderr, m)
		}
	}
	if code != exitOK && code != exitUsage {
		var errs []string
		for l := range strings.Lines(r.stderr) {
			if !strings.HasPrefix(l, "troupe: following the events") {
				errs = append(errs, l)
			}
		}
		if len(errs) != 1 || !strings.HasPrefix(errs[0], "troupe: ") {
			t.Errorf("%s: the error is not one line: %q", what, r.stderr)
		}
	}
}

// canned is a stand-in management server: each route answers a fixed status and
// body, and it records the requests it got.
type canned struct {
	mu     sync.Mutex
	routes map[string]cannedAnswer // "METHOD path"
	got    []*http.Request
	forms  []string
}

type cannedAnswer struct {
	status int
	body   string
}

func (c *canned) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.got = append(c.got, r)
	c.forms = append(c.forms, string(b))
	a, ok := c.routes[r.Method+" "+r.URL.EscapedPath()]
	c.mu.Unlock()
	if !ok {
		a = cannedAnswer{404, `{"error":"no such route: ` + r.Method + " " + r.URL.Path + `"}`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// last returns the last request and its body.
func (c *canned) last() (*http.Request, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[len(c.got)-1], c.forms[len(c.forms)-1]
}

func startCanned(t *testing.T, routes map[string]cannedAnswer) (*canned, string) {
	t.Helper()
	c := &canned{routes: routes}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// closedURL returns the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

const member6 = "troupe://shop@10.0.0.6:2552"

func TestExitCodes(t *testing.T) {
	t.Setenv(envURL, "")
	t.Setenv(envToken, "")
	memberPath6 := "/cluster/members/troupe:%2F%2Fshop@10.0.0.6:2552"
	c, u := startCanned(t, map[string]cannedAnswer{
		"GET /cluster/members":           {200, membersJSON},
		"GET " + memberPath6:             {200, `{"node":"` + member6 + `","nodeUid":"1","status":"Up","roles":[],"upNumber":1,"ageOrder":2}`},
		"PUT " + memberPath6:             {401, `{"error":"a valid bearer token is required"}`},
		"GET /cluster/shards/Nope/stats": {404, `{"error":"entity type \"Nope\" is not started on this node"}`},
		"GET /cluster/shards/Busy/stats": {503, `{"error":"sharding: the coordinator is not known yet"}`},
		"GET /cluster/singletons":        {200, `<html>not the API</html>`},
	})
	ctx := context.Background()

	runCLI(ctx, "-url", u, "members").expect(t, "members", exitOK)
	r := runCLI(ctx, "members", "-url", u, "-json")
	r.expect(t, "members -json", exitOK)
	if r.stdout != membersJSON {
		t.Errorf("-json printed %q, want the body as it came", r.stdout)
	}
	t.Setenv(envURL, u)
	r = runCLI(ctx, "member", "10.0.0.6:2552")
	r.expect(t, "member host:port, URL from the environment", exitOK)
	if !strings.Contains(r.stdout, "\nstatus:     Up\n") {
		t.Errorf("member: %q", r.stdout)
	}
	if req, _ := c.last(); req.URL.EscapedPath() != memberPath6 {
		t.Errorf("member host:port asked %s", req.URL.EscapedPath())
	}
	runCLI(ctx, "member", "10.0.0.9:2552").expect(t, "member host:port unknown", exitNotFound, "no member at 10.0.0.9:2552")
	runCLI(ctx, "member", "shop@10.0.0.9:2552").expect(t, "member unknown", exitNotFound, "not found (404): no such route")

	runCLI(ctx, "leave", member6).expect(t, "leave without a token", exitRefused, "needs the node's token", "-token", envToken)
	if req, body := c.last(); req.Method != http.MethodPut || body != "operation=Leave" || req.Header.Get("Authorization") != "" {
		t.Errorf("leave sent %s %q with Authorization %q", req.Method, body, req.Header.Get("Authorization"))
	}
	t.Setenv(envToken, "from-the-environment")
	runCLI(ctx, "down", "-token", "wrong-token", member6).expect(t, "down with a wrong token", exitRefused, "refused the token")
	if req, body := c.last(); body != "operation=Down" || req.Header.Get("Authorization") != "Bearer wrong-token" {
		t.Errorf("down sent %q with Authorization %q", body, req.Header.Get("Authorization"))
	}
	runCLI(ctx, "down", member6).expect(t, "down, token from the environment", exitRefused)
	if req, _ := c.last(); req.Header.Get("Authorization") != "Bearer from-the-environment" {
		t.Errorf("the token of the environment was not sent: %q", req.Header.Get("Authorization"))
	}
	c.mu.Lock()
	c.routes["PUT "+memberPath6] = cannedAnswer{403, `{"error":"the routes that change the cluster are disabled (Config.EnableWrites)"}`}
	c.mu.Unlock()
	runCLI(ctx, "leave", member6).expect(t, "leave, writes disabled", exitRefused, "refused (403)", "EnableWrites")
	c.mu.Lock()
	c.routes["PUT "+memberPath6] = cannedAnswer{504, `{"error":"the member did not confirm the leave request"}`}
	c.mu.Unlock()
	runCLI(ctx, "leave", member6).expect(t, "leave, no confirmation", exitError, "504 Gateway Timeout: the member did not confirm")

	runCLI(ctx, "shards", "Nope").expect(t, "unknown entity type", exitNotFound, `entity type "Nope" is not started`)
	runCLI(ctx, "shards", "Busy").expect(t, "no coordinator", exitError, "503 Service Unavailable", "coordinator is not known")
	runCLI(ctx, "singletons").expect(t, "not JSON", exitError, "not a Troupe management server")

	runCLI(ctx, "-url", closedURL(t), "members").expect(t, "unreachable", exitUnreachable, "cannot reach the management server", "connection refused")
	runCLI(ctx, "-url", "https://"+strings.TrimPrefix(u, "http://"), "members").expect(t, "https to an http server", exitUnreachable, "cannot reach")
}

func TestUsageExitCodes(t *testing.T) {
	t.Setenv(envURL, "")
	ctx := context.Background()
	r := runCLI(ctx, "help")
	r.expect(t, "help", exitOK)
	for _, cmd := range commands {
		if !strings.Contains(r.stdout, "  "+cmd.name+" ") {
			t.Errorf("the usage does not list %s:\n%s", cmd.name, r.stdout)
		}
	}
	runCLI(ctx, "-h").expect(t, "-h", exitOK)
	runCLI(ctx, "members", "-h").expect(t, "members -h", exitOK, "usage: troupe members")
	runCLI(ctx).expect(t, "no command", exitUsage, "usage: troupe")
	runCLI(ctx, "explode").expect(t, "unknown command", exitUsage, `unknown command "explode"`)
	runCLI(ctx, "-nope", "members").expect(t, "unknown global flag", exitUsage, "-nope")
	runCLI(ctx, "members", "-nope").expect(t, "unknown flag", exitUsage, "-nope")
	runCLI(ctx, "member").expect(t, "member without ADDR", exitUsage, "member needs ADDR")
	runCLI(ctx, "leave", "a@b:1", "c@d:2").expect(t, "two addresses", exitUsage, "too many arguments")
	runCLI(ctx, "members", "extra").expect(t, "members with an argument", exitUsage, "takes no argument")
	runCLI(ctx, "member", "nonsense").expect(t, "malformed address", exitUsage, "want troupe://system@host:port")
	runCLI(ctx, "-url", "ftp://x", "members").expect(t, "bad URL", exitUsage, "-url")
	runCLI(ctx, "-timeout", "0s", "members").expect(t, "zero timeout", exitUsage, "-timeout")
	runCLI(ctx, "-insecure", "members").expect(t, "TLS flags on http", exitUsage, "https://")
	runCLI(ctx, "-url", "https://127.0.0.1:1", "-cert", "x.pem", "members").expect(t, "-cert alone", exitUsage, "-cert and -key")
	runCLI(ctx, "-url", "https://127.0.0.1:1", "-cacert", "/no/such/file", "members").expect(t, "missing -cacert", exitUsage, "-cacert")
	runCLI(ctx, "shards", "-detail").expect(t, "-detail without a type", exitUsage, "need an entity type")
	runCLI(ctx, "remove-sharding-data", "Counter").expect(t, "removal without -dir", exitUsage, "needs the journal: -dir (badger) or -postgres")
	runCLI(ctx, "remove-sharding-data", "-dir", t.TempDir()).expect(t, "removal without a type", exitUsage, "needs TYPE...")
}

// A request that gets no answer in -timeout is exit code 3; an interrupted one 130.
func TestTimeoutAndInterrupt(t *testing.T) {
	t.Setenv(envURL, "")
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	runCLI(context.Background(), "-url", srv.URL, "-timeout", "200ms", "members").
		expect(t, "timeout", exitUnreachable, "no answer within -timeout 200ms")
	<-arrived

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	runCLI(ctx, "-url", srv.URL, "members").expect(t, "interrupted", exitInterrupted, "interrupted")
}

// sseServer serves an event stream of frames, then ends it, or with hold waits until
// the client goes away.
func sseServer(t *testing.T, hold bool, frames ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cluster/events" || r.URL.Query().Get("type") != "member-up,member-removed" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"unexpected request %s"}`, r.URL)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ": stream open\n\n")
		for _, f := range frames {
			_, _ = io.WriteString(w, f)
		}
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const (
	upFrame      = "id: 1\nevent: member-up\ndata: {\"type\":\"member-up\",\"time\":\"2026-11-29T07:24:02Z\",\"member\":{\"node\":\"troupe://shop@10.0.0.7:2552\",\"nodeUid\":\"1\",\"status\":\"Up\",\"roles\":[],\"upNumber\":1,\"ageOrder\":0}}\n\n"
	removedFrame = "id: 2\nevent: member-removed\ndata: {\"type\":\"member-removed\",\"time\":\"2026-11-29T07:25:02Z\",\"member\":{\"node\":\"troupe://shop@10.0.0.7:2552\",\"nodeUid\":\"1\",\"status\":\"Removed\",\"roles\":[],\"upNumber\":1,\"ageOrder\":0},\"previousStatus\":\"Down\"}\n\n"
)

func TestEventsEndedByTheServer(t *testing.T) {
	t.Setenv(envURL, "")
	u := sseServer(t, false, upFrame, ": keep-alive\n\n", removedFrame)
	r := runCLI(context.Background(), "-url", u, "events", "-type", "member-up, member-removed")
	r.expect(t, "events", exitError, "following the events of "+u, "the server ended the event stream")
	checkRendered(t, "events", r.stdout, lines(
		"2026-11-29T07:24:02.000Z  member-up  troupe://shop@10.0.0.7:2552 Up",
		"2026-11-29T07:25:02.000Z  member-removed  troupe://shop@10.0.0.7:2552 Removed (was Down)",
	))
	r = runCLI(context.Background(), "-url", u, "-json", "events", "-type", "member-up,member-removed")
	if r.code != exitError || strings.Count(r.stdout, "\n") != 2 || !strings.HasPrefix(r.stdout, `{"type":"member-up",`) {
		t.Errorf("events -json: %d %q %q", r.code, r.stdout, r.stderr)
	}
	runCLI(context.Background(), "-url", u, "events", "-type", "nope").expect(t, "a refused filter", exitError, "400 Bad Request")
	u = sseServer(t, false, "data: {not json\n\n")
	runCLI(context.Background(), "-url", u, "events", "-type", "member-up,member-removed").
		expect(t, "a malformed event", exitError, "not a Troupe management server")
}

// syncWriter is a writer that tells a channel of each line written, for reading a
// command's output while it runs.
type syncWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newSyncWriter() *syncWriter { return &syncWriter{lines: make(chan string, 64)} }

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		s := w.buf.String()
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- s[:i]
		w.buf.Next(i + 1)
	}
}

// await returns the next line written that contains want.
func (w *syncWriter) await(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(testkit.Dilated(30 * time.Second))
	for {
		select {
		case l := <-w.lines:
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("no line with %q", want)
		}
	}
}

// runAsync runs troupe in the background; the returned channel gets its exit code.
func runAsync(ctx context.Context, stdout, stderr io.Writer, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	return done
}

func TestEventsUntilInterrupted(t *testing.T) {
	t.Setenv(envURL, "")
	u := sseServer(t, true, upFrame)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := newSyncWriter(), newSyncWriter()
	done := runAsync(ctx, out, errOut, "-url", u, "events", "-type", "member-up,member-removed")
	errOut.await(t, "following the events")
	out.await(t, "member-up")
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("events ended with %d after an interrupt, want 0", code)
	}
}

// -cacert trusts a server's certificate authority; without it the certificate is
// refused (exit code 3), and -insecure skips the check.
func TestTLS(t *testing.T) {
	t.Setenv(envURL, "")
	srv := httptest.NewUnstartedServer(&canned{routes: map[string]cannedAnswer{"GET /cluster/members": {200, membersJSON}}})
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runCLI(ctx, "-url", srv.URL, "-cacert", ca, "members").expect(t, "-cacert", exitOK)
	runCLI(ctx, "-url", srv.URL, "members").expect(t, "an unknown authority", exitUnreachable, "certificate")
	runCLI(ctx, "-url", srv.URL, "-insecure", "members").expect(t, "-insecure", exitOK)
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI(ctx, "-url", srv.URL, "-cacert", empty, "members").expect(t, "no certificate in -cacert", exitUsage, "no PEM certificate")
}
