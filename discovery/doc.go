// Package discovery looks a service's name up and returns its addresses: from a static
// table, DNS, or the Kubernetes API. The cluster's bootstrap uses it to find the nodes
// of a deployment whose addresses are not known in advance.
package discovery
