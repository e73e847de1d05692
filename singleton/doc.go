// Package singleton is Troupe's cluster singleton: one actor that runs on exactly one
// member of the cluster (or of the members with a role), the oldest, and moves to the
// next oldest when that member leaves or fails; and proxies that reach it from any
// member, wherever it runs.
package singleton
