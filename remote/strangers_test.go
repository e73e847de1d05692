package remote_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

// roundTrip checks that a's probe can ping b's echo.
func roundTrip(t *testing.T, a, b node, n int) {
	t.Helper()
	echo, err := b.sys.Resolve("/user/echo")
	if err != nil {
		echo, err = b.sys.Spawn(echoProps(), "echo")
		if err != nil {
			t.Fatal(err)
		}
	}
	probe := testkit.NewProbe(t, a.sys)
	probe.Send(a.remoteRef(t, echo), &ping{N: n})
	if got := testkit.ExpectMsgType[*pong](probe); got.N != n {
		t.Fatalf("pong %d, want %d", got.N, n)
	}
}

// rawConn dials n's listener as a stranger would.
func rawConn(t *testing.T, n node) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", n.r.Address().HostPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(testkit.Dilated(5 * time.Second)))
	return c
}

// expectClosed reads until the server closes the connection.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("connection not closed by the server: %v", err)
	}
}

func TestGarbageClosesOnlyThatConnection(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	roundTrip(t, a, b, 1)

	junk := rawConn(t, b)
	_, _ = junk.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	expectClosed(t, junk)

	huge := rawConn(t, b)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<31)
	_, _ = huge.Write(hdr[:])
	expectClosed(t, huge)

	if got := b.r.Stats().Rejected; got != 2 {
		t.Errorf("rejected = %d, want 2", got)
	}
	roundTrip(t, a, b, 2) // the real peer is unaffected
}

func TestWrongSecretIsRejectedBeforeAnyMessage(t *testing.T) {
	reg := registry(t)
	withSecret := func(s string) func(*remote.Config) {
		return func(c *remote.Config) { c.Secret = []byte(s) }
	}
	a := startNode(t, "a", reg, withSecret("s3cret"))
	b := startNode(t, "b", reg, withSecret("s3cret"))
	roundTrip(t, a, b, 1)

	probe := testkit.NewProbe(t, b.sys)
	for _, intruder := range []node{
		startNode(t, "wrong", reg, withSecret("guess")),
		startNode(t, "none", reg),
	} {
		ref := intruder.remoteRef(t, probe.Ref())
		_ = ref.Tell(&pong{N: 99})
	}
	probe.ExpectNoMsg(testkit.Dilated(300 * time.Millisecond))
	if b.r.Stats().Rejected == 0 {
		t.Error("no rejected connection counted")
	}
	if b.r.Stats().MessagesIn == 0 {
		t.Error("the legitimate peer's messages were not counted")
	}
}

func TestHandshakeFromAStranger(t *testing.T) {
	reg := registry(t)
	b := startNode(t, "b", reg)
	// A hello for another address is refused with a reason and the connection closes.
	c := rawConn(t, b)
	_, _ = c.Write(remote.AppendHelloForTest(42, "troupe://x@127.0.0.1:1", "troupe://nobody@127.0.0.1:2"))
	br := bufio.NewReader(c)
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	if body[0] != 4 { // reject
		t.Fatalf("answer kind %d, want a reject", body[0])
	}
	expectClosed(t, c)
}

func TestMutualTLS(t *testing.T) {
	reg := registry(t)
	goodCA := newCA(t, "good")
	badCA := newCA(t, "bad")
	tlsFrom := func(ca *testCA) func(*remote.Config) {
		return func(c *remote.Config) { c.TLS = ca.config(t) }
	}
	a := startNode(t, "a", reg, tlsFrom(goodCA))
	b := startNode(t, "b", reg, tlsFrom(goodCA))
	roundTrip(t, a, b, 1)

	// Both lanes run over TLS: a watch (system lane) works too.
	echo, _ := b.sys.Resolve("/user/echo")
	watcher := testkit.NewProbe(t, a.sys)
	watcher.Watch(a.remoteRef(t, echo))
	roundTrip(t, a, b, 2) // the watch is in place
	if err := b.sys.Stop(echo); err != nil {
		t.Fatal(err)
	}
	watcher.ExpectTerminated(a.remoteRef(t, echo))

	intruder := startNode(t, "intruder", reg, tlsFrom(badCA))
	probe := testkit.NewProbe(t, b.sys)
	_ = intruder.remoteRef(t, probe.Ref()).Tell(&pong{N: 1})
	probe.ExpectNoMsg(testkit.Dilated(300 * time.Millisecond))
	if b.r.Stats().Rejected == 0 {
		t.Error("the intruder's connection was not rejected")
	}
}

func TestRestartedPeerIsANewIncarnation(t *testing.T) {
	reg := registry(t)
	a := startNode(t, "a", reg)
	// b1 leaves without its goodbye, as a crashed system would: a learns of the new
	// incarnation from its handshake (TestAPeerHearsThatASystemShutDown has the goodbye).
	b1 := startNode(t, "b", reg, func(c *remote.Config) { c.ShutdownFlushTimeout = -1 })
	port := b1.r.Address().Port
	echo1, _ := b1.sys.Spawn(echoProps(), "echo")
	old := a.remoteRef(t, echo1)
	roundTrip(t, a, b1, 1)
	shutdown(t, b1.sys)

	b2 := startNode(t, "b", reg, func(c *remote.Config) { c.ListenPort = port })
	echo2, _ := b2.sys.Spawn(echoProps(), "echo")
	dead := make(chan actor.DeadLetter, 16)
	sub, _ := b2.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if dl, ok := ctx.Message().(actor.DeadLetter); ok {
			select {
			case dead <- dl:
			default:
			}
		}
	}), "dead-letters")
	actor.Subscribe[actor.DeadLetter](b2.sys.EventStream(), sub)

	// Messages for the old incarnation are dead letters at the new one. (The first
	// sends may vanish with the old connection, as messages do: delivery is at most
	// once. Keep sending until the new incarnation is reached.)
	probe := testkit.NewProbe(t, a.sys)
	deadline := time.Now().Add(testkit.Dilated(5 * time.Second))
	for reached := false; !reached; {
		probe.Send(old, &ping{N: 1})
		select {
		case dl := <-dead:
			if p, ok := dl.Message.(*ping); !ok || p.N != 1 {
				t.Fatalf("dead letter %#v", dl.Message)
			}
			reached = true
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no dead letter at the new incarnation")
			}
		}
	}
	probe.Send(a.remoteRef(t, echo2), &ping{N: 2})
	if got := testkit.ExpectMsgType[*pong](probe); got.N != 2 {
		t.Fatalf("pong %d", got.N)
	}
	if q := a.r.Stats().Quarantines; q != 1 {
		t.Errorf("quarantines = %d, want 1 (the old incarnation)", q)
	}
	probe.ExpectNoMsg(testkit.Dilated(100 * time.Millisecond)) // the old ref's pings reached no echo
}

// testCA is a throwaway certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// config returns a mutual-TLS config with a certificate for 127.0.0.1 signed by ca.
func (ca *testCA) config(t *testing.T) *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}
