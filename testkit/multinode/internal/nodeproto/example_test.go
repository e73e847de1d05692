package nodeproto_test

import (
	"encoding/json"
	"fmt"

	"github.com/troupe-go/troupe/testkit/multinode/internal/nodeproto"
)

// The line a node writes when it sees another member removed after being downed.
func Example() {
	line := nodeproto.Line{Time: 1_700_000_000_000_000_000, Kind: nodeproto.KindEvent, Event: nodeproto.EventRemoved,
		Member:   &nodeproto.Member{Addr: "troupe://shop@10.0.0.4:2552", UID: 7, HostPort: "10.0.0.4:2552", Status: "Removed"},
		Previous: "Down"}
	b, _ := json.Marshal(line)
	fmt.Println(string(b))
	// Output:
	// {"t":1700000000000000000,"kind":"event","event":"removed","member":{"addr":"troupe://shop@10.0.0.4:2552","uid":7,"hostPort":"10.0.0.4:2552","status":"Removed"},"previous":"Down"}
}
