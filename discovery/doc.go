// Package discovery looks a service's name up and returns its addresses: from a static
// table, DNS, or the Kubernetes API. The cluster's bootstrap uses it to find the nodes
// of a deployment whose addresses are not known in advance (cluster.BootstrapConfig).
//
// A Discovery has one method, Lookup, which takes a Lookup (the service's name and,
// optionally, a named port) and returns Targets (host and port), sorted and without
// duplicates, or an error. An error that wraps ErrNotFound means the source answered
// and knows no address; any other error means the source could not be asked (a DNS
// server failure, a refused token, an API server that is down). Callers that poll, as
// the bootstrap does, treat both the same way: try again later.
//
// The implementations:
//
//   - Static: a fixed table of addresses, for tests, development and fixed fleets.
//   - DNS: A and AAAA records with a configured port, or SRV records with their ports
//     (Lookup.PortName and Protocol), through the standard library's resolver; a
//     server address may be given.
//   - Kubernetes: the Running pods that match a label selector, listed through the API
//     server with the pod's service account (RBAC: get, list and watch on pods); a
//     thin REST client, no client-go.
//   - Aggregate: several of these in order; the first non-empty answer wins.
//
// Every implementation is a plain value, safe for concurrent use, that holds no
// goroutine or connection between lookups. A lookup ends when its context does.
//
// # What can be lost, and when
//
// Discovery carries no messages. A lookup answers with the addresses its source has at
// that moment: a pod that starts a moment later, or a DNS record still cached
// elsewhere, shows up at a later lookup. Entries that cannot be used are left out of
// the answer rather than reported one by one: Kubernetes pods that are not Running,
// are being deleted, have no IP or lack the named port; SRV records whose target is
// "." or does not resolve (when none resolves, the lookup fails). A Static table with
// a bad address fails the lookup of that service, naming the address.
package discovery
