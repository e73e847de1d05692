// Package wiretypes lists the message types Troupe's own packages send each other
// between nodes (the cluster's heartbeats and reachability gossip, for example), so
// that every serialization.Registry encodes and decodes them without the application
// registering them. Their names start with Prefix, which applications cannot register.
//
// A package registers its types in an init function; serialization consults the list
// when a registry does not know a type or a name.
package wiretypes
