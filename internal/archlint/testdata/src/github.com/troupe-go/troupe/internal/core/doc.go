// Package core is a pure core.
//
//troupe:core
package core
