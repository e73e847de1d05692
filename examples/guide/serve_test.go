package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	"github.com/troupe-go/troupe/testkit/pgtest"
)

// The mode of the guide's step 7: three node processes on one PostgreSQL journal,
// used through their HTTP APIs. The first node leaves on SIGTERM: its accounts and the
// allocator go on from the others, with their state.
func TestThreeProcessesOnPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	target, release, err := pgtest.Acquire(ctx, pgtest.Options{})
	cancel()
	if errors.Is(err, pgtest.ErrNoPostgres) && !pgtest.Required() {
		t.Skipf("no PostgreSQL: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)

	bin := filepath.Join(t.TempDir(), "guide")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ports := multinode.FreePorts(t, 8) // gossip of the two seeds, then an API and a management port per node
	seeds := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	var nodes []*multinode.Process
	var api, mgmt []string
	for i := range 3 {
		args := []string{"-postgres", target.ConnString, "-node", fmt.Sprintf("bank-%d", i+1),
			"-seeds", seeds, "-http", fmt.Sprintf("127.0.0.1:%d", ports[2+i]),
			"-management", fmt.Sprintf("127.0.0.1:%d", ports[5+i])}
		if i < 2 {
			args = append(args, "-gossip-port", fmt.Sprint(ports[i]))
		}
		p := multinode.StartProcess(t, bin, args...)
		p.WaitFor(testkit.Dilated(30*time.Second), "the node's first line", func(l string) bool { return strings.Contains(l, "bank API") })
		nodes = append(nodes, p)
		api = append(api, fmt.Sprintf("http://127.0.0.1:%d", ports[2+i]))
		mgmt = append(mgmt, fmt.Sprintf("http://127.0.0.1:%d", ports[5+i]))
	}
	// Distributed data's ReadAll counts the members a node sees Up: wait until each
	// node sees all three.
	for _, m := range mgmt {
		awaitAllUp(t, m, 3)
	}

	// The first account waits for the allocator to start.
	r := retry[Receipt](t, "POST", api[0]+"/accounts?owner=ann")
	if r.Account != "1001" || r.Owner != "ann" {
		t.Fatalf("opened %+v, want account 1001 of ann", r)
	}
	if r := call[Receipt](t, "POST", api[1]+"/accounts/1001/deposit?amount=100"); r.Balance != 100 {
		t.Fatalf("deposit: %+v", r)
	}
	if r := call[Receipt](t, "POST", api[2]+"/accounts/1001/withdraw?amount=30"); r.Balance != 70 {
		t.Fatalf("withdraw: %+v", r)
	}
	if r := call[Receipt](t, "POST", api[0]+"/accounts/1001/withdraw?amount=500"); r.Balance != 70 || r.Rejected == "" {
		t.Fatalf("withdrawing too much: %+v", r)
	}
	if n := call[uint64](t, "GET", api[1]+"/transactions"); n != 2 {
		t.Fatalf("transactions: %d, want 2", n)
	}

	if err := nodes[0].Stop(testkit.Dilated(60 * time.Second)); err != nil {
		t.Fatalf("bank-1 did not leave and exit 0 on SIGTERM: %v", err)
	}
	nodes[0].WaitFor(time.Second, "the goodbye", func(l string) bool { return strings.Contains(l, "left the cluster and stopped") })
	if r := retry[Receipt](t, "GET", api[1]+"/accounts/1001"); r.Balance != 70 {
		t.Fatalf("after bank-1 left: %+v, want balance 70", r)
	}
	if r := call[Receipt](t, "POST", api[2]+"/accounts?owner=bob"); r.Account != "1002" {
		t.Fatalf("after bank-1 left, opened %+v, want account 1002", r)
	}
	for i, p := range nodes[1:] {
		if err := p.Stop(testkit.Dilated(60 * time.Second)); err != nil {
			t.Errorf("bank-%d: %v", i+2, err)
		}
	}
}

// call makes one request and decodes its JSON answer; any failure fails the test.
func call[T any](t *testing.T, method, u string) T {
	t.Helper()
	v, err := request[T](method, u)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// retry makes the request until it succeeds; each attempt waits for its answer (the
// node bounds it at 5 s). For requests that may be repeated: the first ones, which
// wait for the cluster to form, and reads.
func retry[T any](t *testing.T, method, u string) T {
	t.Helper()
	deadline := time.Now().Add(testkit.Dilated(60 * time.Second))
	for {
		v, err := request[T](method, u)
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

func request[T any](method, u string) (T, error) {
	var v T
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		return v, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return v, err
	}
	if resp.StatusCode != http.StatusOK {
		p, _ := url.Parse(u)
		return v, fmt.Errorf("%s %s: %s: %s", method, p.Path, resp.Status, body)
	}
	return v, json.Unmarshal(body, &v)
}

// awaitAllUp waits until the node whose management server is at mgmt sees want
// members, all Up: it reads the members, and again at each member-up event.
func awaitAllUp(t *testing.T, mgmt string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(60*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", mgmt+"/cluster/events?type=member-up", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req) // open before the first read, so no event is missed
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	for {
		type members struct {
			Members []struct{ Node, Status string }
		}
		ms := call[members](t, "GET", mgmt+"/cluster/members")
		up := 0
		for _, m := range ms.Members {
			if m.Status == "Up" {
				up++
			}
		}
		if up == want && len(ms.Members) == want {
			return
		}
		upEvent := false
		for !upEvent && events.Scan() {
			upEvent = strings.HasPrefix(events.Text(), "event: member-up")
		}
		if !upEvent { // the stream ended, or the deadline passed
			t.Fatalf("%s: %d of %d members Up (%+v); the event stream ended: %v", mgmt, up, want, ms.Members, events.Err())
		}
	}
}
