package management_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/management"
)

// A management server on the loopback interface (port 0 picks a free port; the
// default is 127.0.0.1:8558), asked whether the node is alive, as a Kubernetes
// liveness probe would.
func Example() {
	sys, _ := actor.New("shop", actor.Config{})
	defer func() { _ = sys.Shutdown(context.Background()) }()

	m, err := management.Start(sys, management.Config{Address: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(m.URL() + "/alive")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.TrimSpace(string(body)))
	// Output: 200 {"status":"alive"}
}
