// Package doccheck holds the test that keeps the documentation honest: every Go block
// in README.md and docs/*.md is type-checked against the current packages, so an API
// change that a page does not follow fails the build.
//
// A block may be a whole file, declarations, statements, or declarations followed by
// statements. Statements are checked inside a function; the packages a block uses
// (actor, remote, context, time, ...) are imported for it; names a block uses without
// declaring them are allowed, and a few conventional ones (sys, ref, probe, ...) are
// declared with their usual types so that calls on them are checked too. Every other
// type error fails the test, naming the page and the block's first line.
package doccheck
