package management_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/testkit"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "management test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestTLSAndNoCluster serves HTTPS only, on a system without a cluster: the health
// routes answer, the member routes say the cluster is not started, and Start refuses
// a second server and invalid configurations.
func TestTLSAndNoCluster(t *testing.T) {
	sys := testkit.NewSystem(t)
	cert, pool := selfSigned(t)
	m, err := management.Start(sys, management.Config{Address: "127.0.0.1:0",
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.URL(), "https://") || management.Get(sys) != m {
		t.Fatalf("URL %s, Get %p", m.URL(), management.Get(sys))
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: testkit.Dilated(10 * time.Second)}
	getJSON(t, c, m.URL()+"/alive", 200, nil)
	getJSON(t, c, m.URL()+"/ready", 200, nil)
	getJSON(t, c, m.URL()+"/cluster/members", 503, nil)
	getJSON(t, c, m.URL()+"/cluster/shards", 200, nil)
	getJSON(t, c, m.URL()+"/cluster/singletons", 200, nil)

	plain := client(t)
	status, _ := do(t, plain, http.MethodGet, "http://"+m.Addr().String()+"/alive", nil, nil)
	if status != http.StatusBadRequest { // net/http's answer to plain HTTP on a TLS port
		t.Fatalf("plain HTTP on the TLS port: %d", status)
	}

	if _, err := management.Start(sys, management.Config{Address: "127.0.0.1:0"}); !errors.Is(err, management.ErrAlreadyStarted) {
		t.Fatalf("a second Start: %v", err)
	}
	if _, err := management.Start(testkit.NewSystem(t), management.Config{EnableWrites: true}); !errors.Is(err, management.ErrInvalidConfig) {
		t.Fatalf("writes without a token: %v", err)
	}
}
