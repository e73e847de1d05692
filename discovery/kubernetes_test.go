package discovery

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

var app = map[string]string{"app": "troupe"}

// mixedPods are the pods of namespace demo: Running ones with and without the named
// port, others pending, finished, being deleted or without an IP, and a pod of
// another app.
var mixedPods = []testPod{
	{name: "n3", phase: "Running", ip: "10.1.0.3", labels: app, ports: [][2]any{{"remote", 2552}, {"gossip", 7946}}},
	{name: "n1", phase: "Running", ip: "10.1.0.1", labels: app, ports: [][2]any{{"gossip", 7000}},
		sidecarPorts: [][2]any{{"metrics", 9090}}},
	{name: "n2", phase: "Running", ip: "10.1.0.2", labels: app, ports: [][2]any{{"remote", 2552}}},
	{name: "n3-twin", phase: "Running", ip: "10.1.0.3", labels: app, ports: [][2]any{{"gossip", 7946}}},
	{name: "pending", phase: "Pending", ip: "10.1.0.4", labels: app, ports: [][2]any{{"gossip", 7946}}},
	{name: "leaving", phase: "Running", ip: "10.1.0.5", labels: app, deleting: true, ports: [][2]any{{"gossip", 7946}}},
	{name: "no-ip", phase: "Running", labels: app, ports: [][2]any{{"gossip", 7946}}},
	{name: "done", phase: "Succeeded", ip: "10.1.0.6", labels: app, ports: [][2]any{{"gossip", 7946}}},
	{name: "failed", phase: "Failed", ip: "10.1.0.7", labels: app, ports: [][2]any{{"gossip", 7946}}},
	{name: "other", phase: "Running", ip: "10.9.9.9", labels: map[string]string{"app": "other"}, ports: [][2]any{{"gossip", 7946}}},
}

func TestKubernetesListsRunningPods(t *testing.T) {
	a := startAPI(t)
	a.set(func(a *fakeAPI) { a.pods["demo"] = mixedPods })
	k := a.client()

	got, err := k.Lookup(lookupCtx(t), Lookup{Service: "troupe", PortName: "gossip"})
	if err != nil {
		t.Fatal(err)
	}
	// n2 has no gossip port; n3-twin repeats n3's address.
	want := []Target{{"10.1.0.1", 7000}, {"10.1.0.3", 7946}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("named port: got %v, want %v", got, want)
	}
	r := a.lastRequest()
	if r.URL.Path != "/api/v1/namespaces/demo/pods" || r.URL.Query().Get("labelSelector") != "app=troupe" {
		t.Fatalf("request %s?%s; want the pods of namespace demo (from the namespace file) with app=troupe", r.URL.Path, r.URL.RawQuery)
	}
	if r.Method != "GET" || r.Header.Get("Accept") != "application/json" {
		t.Fatalf("request %s with Accept %q", r.Method, r.Header.Get("Accept"))
	}

	// Without a port name: every Running pod with the configured port (0 by default).
	k.Port = 2552
	got, err = k.Lookup(lookupCtx(t), Lookup{Service: "troupe"})
	if err != nil {
		t.Fatal(err)
	}
	want = []Target{{"10.1.0.1", 2552}, {"10.1.0.2", 2552}, {"10.1.0.3", 2552}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("configured port: got %v, want %v", got, want)
	}
}

func TestKubernetesSelectorAndNamespace(t *testing.T) {
	a := startAPI(t)
	labels := map[string]string{"app.kubernetes.io/name": "troupe", "tier": "troupe"}
	a.set(func(a *fakeAPI) {
		a.pods["prod"] = []testPod{{name: "x", phase: "Running", ip: "10.2.0.1", labels: labels}}
		a.pods["demo"] = mixedPods
	})
	k := a.client()
	k.Namespace = "prod" // wins over the namespace file
	k.PodLabelSelector = "app.kubernetes.io/name=%s,tier=%s"
	got, err := k.Lookup(lookupCtx(t), Lookup{Service: "troupe"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Target{{"10.2.0.1", 0}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if q := a.lastRequest().URL.Query().Get("labelSelector"); q != "app.kubernetes.io/name=troupe,tier=troupe" {
		t.Fatalf("labelSelector %q", q)
	}
}

func TestKubernetesNotFound(t *testing.T) {
	a := startAPI(t)
	a.set(func(a *fakeAPI) { a.pods["demo"] = mixedPods })
	k := a.client()
	for _, l := range []Lookup{
		{Service: "nobody"},                     // no pod matches
		{Service: "other", PortName: "remote"},  // the matching pod lacks the port
		{Service: "troupe", PortName: "absent"}, // no pod has it
	} {
		if ts, err := k.Lookup(lookupCtx(t), l); !errors.Is(err, ErrNotFound) {
			t.Errorf("%+v: %v, %v; want ErrNotFound", l, ts, err)
		}
	}
	a.set(func(a *fakeAPI) { a.pods["demo"] = mixedPods[4:9] }) // none Running and usable
	if ts, err := k.Lookup(lookupCtx(t), Lookup{Service: "troupe"}); !errors.Is(err, ErrNotFound) ||
		!strings.Contains(err.Error(), "5 pods listed") {
		t.Errorf("no usable pod: %v, %v; want ErrNotFound saying 5 pods were listed", ts, err)
	}
}

// The token is read from its file at every lookup: a rotated token is used at once.
func TestKubernetesTokenRotation(t *testing.T) {
	a := startAPI(t)
	a.set(func(a *fakeAPI) { a.pods["demo"] = mixedPods })
	k := a.client()
	l := Lookup{Service: "troupe", PortName: "gossip"}
	if _, err := k.Lookup(lookupCtx(t), l); err != nil {
		t.Fatal(err)
	}

	a.set(func(a *fakeAPI) { a.token = "token-2" }) // the API server moved on; the file has not yet
	_, err := k.Lookup(lookupCtx(t), l)
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "401") ||
		!strings.Contains(err.Error(), "token") {
		t.Fatalf("old token: %v; want an error about the token and 401", err)
	}

	a.writeFile("token", "token-2\n")
	if ts, err := k.Lookup(lookupCtx(t), l); err != nil || len(ts) != 2 {
		t.Fatalf("rotated token: %v, %v", ts, err)
	}
	if got := a.lastRequest().Header.Get("Authorization"); got != "Bearer token-2" {
		t.Fatalf("Authorization %q, want the token without its newline", got)
	}
}

func TestKubernetesForbiddenNamesRBAC(t *testing.T) {
	a := startAPI(t)
	a.set(func(a *fakeAPI) { a.failWith = 403 })
	_, err := a.client().Lookup(lookupCtx(t), Lookup{Service: "troupe"})
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("403: %v", err)
	}
	for _, s := range []string{"403", "get, list and watch on pods", "RBAC", "namespace demo"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("403 error %q does not say %q", err, s)
		}
	}
}

// The API server failing, then down, then back: each failure is an error that is not
// ErrNotFound, and the first lookup after it recovers succeeds.
func TestKubernetesServerFailureAndRecovery(t *testing.T) {
	a := startAPI(t)
	a.set(func(a *fakeAPI) { a.pods["demo"] = mixedPods; a.failWith = 500 })
	k := a.client()
	l := Lookup{Service: "troupe", PortName: "gossip"}

	_, err := k.Lookup(lookupCtx(t), l)
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "500") ||
		!strings.Contains(err.Error(), "etcdserver: request timed out") {
		t.Fatalf("500: %v; want an error with the status and the API server's message", err)
	}
	a.set(func(a *fakeAPI) { a.failWith = 0 })
	if ts, err := k.Lookup(lookupCtx(t), l); err != nil || len(ts) != 2 {
		t.Fatalf("after the 500: %v, %v", ts, err)
	}

	a.stop()
	if _, err := k.Lookup(lookupCtx(t), l); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("server down: %v; want an error other than ErrNotFound", err)
	}
	a.start()
	if ts, err := k.Lookup(lookupCtx(t), l); err != nil || len(ts) != 2 {
		t.Fatalf("after the restart: %v, %v", ts, err)
	}
}

func TestKubernetesBadAnswers(t *testing.T) {
	a := startAPI(t)
	k := a.client()
	l := Lookup{Service: "troupe"}
	cases := []struct{ body, want string }{
		{"<html>gateway</html>", "not JSON"},
		{`{"kind":"Status","message":"hm"}`, `"Status", not a PodList`},
		{`{"kind":"PodList","items":{}}`, "not JSON"},
	}
	for _, c := range cases {
		a.set(func(a *fakeAPI) { a.body = c.body })
		_, err := k.Lookup(lookupCtx(t), l)
		if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("body %q: %v; want an error saying %q", c.body, err, c.want)
		}
	}

	a.set(func(a *fakeAPI) {
		a.body = ""
		for i := range 100 {
			a.pods["demo"] = append(a.pods["demo"], testPod{name: "p", phase: "Running", ip: "10.3.0." + strconv.Itoa(i%10), labels: app})
		}
	})
	k.MaxResponseBytes = 4096
	if _, err := k.Lookup(lookupCtx(t), l); err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes") {
		t.Fatalf("oversized answer: %v", err)
	}
	k.MaxResponseBytes = 0 // the default is large enough
	if ts, err := k.Lookup(lookupCtx(t), l); err != nil || len(ts) != 10 {
		t.Fatalf("default bound: %v, %v", ts, err)
	}
}

func TestKubernetesConfigErrors(t *testing.T) {
	a := startAPI(t)
	l := Lookup{Service: "troupe"}
	cases := []struct {
		name   string
		change func(k *Kubernetes)
		want   string
	}{
		{"no token file", func(k *Kubernetes) { k.TokenFile = k.TokenFile + ".missing" }, "service account token"},
		{"no namespace file", func(k *Kubernetes) { k.NamespaceFile = k.NamespaceFile + ".missing" }, "namespace"},
		{"no CA file", func(k *Kubernetes) { k.CAFile = k.CAFile + ".missing" }, "CA file"},
		{"CA file without PEM", func(k *Kubernetes) { k.CAFile = k.TokenFile }, "no PEM certificate"},
		{"an untrusted server", func(k *Kubernetes) { k.CAFile = otherCA(t, a) }, "certificate"},
	}
	for _, c := range cases {
		k := a.client()
		c.change(&k)
		_, err := k.Lookup(lookupCtx(t), l)
		if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", c.name, err, c.want)
		}
	}
	a.writeFile("namespace", "\n")
	if _, err := a.client().Lookup(lookupCtx(t), l); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty namespace file: %v", err)
	}
	if _, err := a.client().Lookup(lookupCtx(t), Lookup{}); err == nil {
		t.Error("empty service: no error")
	}
}

// otherCA writes a CA certificate that did not sign the fake server's certificate.
func otherCA(t *testing.T, a *fakeAPI) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	a.writeFile("other-ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	return a.dir + "/other-ca.crt"
}

// By default the API server is the one Kubernetes names in the environment.
func TestKubernetesAPIServerFromEnvironment(t *testing.T) {
	a := startAPI(t)
	a.set(func(a *fakeAPI) { a.pods["demo"] = mixedPods })
	host, port, _ := net.SplitHostPort(a.addr)
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	k := a.client()
	k.APIServer = ""
	if ts, err := k.Lookup(lookupCtx(t), Lookup{Service: "troupe", PortName: "gossip"}); err != nil || len(ts) != 2 {
		t.Fatalf("from the environment: %v, %v", ts, err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := k.Lookup(lookupCtx(t), Lookup{Service: "troupe"}); err == nil ||
		!strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
		t.Fatalf("without the environment: %v", err)
	}
}
