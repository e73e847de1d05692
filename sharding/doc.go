// Package sharding is Troupe's cluster sharding (work in progress: the cores).
package sharding
