package discovery_test

import (
	"context"
	"fmt"

	"github.com/troupe-go/troupe/discovery"
)

// A static table answers lookups with its addresses, sorted; a host without a port
// gives a target with port 0 (the cluster's bootstrap reads it as "my own gossip
// port").
func ExampleStatic() {
	d := discovery.Static{Services: map[string][]string{
		"troupe": {"10.0.0.7:7946", "10.0.0.5", "10.0.0.6:7946", "10.0.0.7:7946"},
	}}
	targets, err := d.Lookup(context.Background(), discovery.Lookup{Service: "troupe"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range targets {
		fmt.Println(t)
	}
	_, err = d.Lookup(context.Background(), discovery.Lookup{Service: "other"})
	fmt.Println(err)
	// Output:
	// 10.0.0.5
	// 10.0.0.6:7946
	// 10.0.0.7:7946
	// discovery: no address found for the service: static: service "other" is not in the table
}

// In a Kubernetes pod, the zero value of Kubernetes finds the API server, the token,
// the CA and the namespace by itself; the label selector and the named port say which
// pods and which port. The Aggregate falls back to the headless Service's SRV records
// (the pod's DNS search domains complete the name) when the pods cannot be listed.
func ExampleAggregate() {
	var d discovery.Discovery = discovery.Aggregate{Sources: []discovery.Discovery{
		discovery.Kubernetes{PodLabelSelector: "app=%s"},
		discovery.DNS{},
	}}
	lookup := discovery.Lookup{Service: "troupe-demo", PortName: "gossip", Protocol: "tcp"}
	fmt.Printf("%T looks up %s\n", d, lookup.Service) // in a pod: targets, err := d.Lookup(ctx, lookup)
	// Output: discovery.Aggregate looks up troupe-demo
}
