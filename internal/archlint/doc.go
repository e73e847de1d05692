// Package archlint holds the analyzers that check the rules of Troupe's architecture a
// program can check (docs/DESIGN.md, "Rules CI checks"):
//
//   - [NoInternalImport]: nothing under examples/ and nothing a user can import from
//     testkit/ imports the module's internal/ packages, so what users copy compiles in
//     their own module.
//   - [PureCore]: a protocol core (a package whose doc file carries the //troupe:core
//     directive) starts no goroutine, reads no clock, draws no unseeded random number and
//     imports no network, serf, memberlist, remote or cluster package: it takes its
//     inputs and the current time and returns what to do.
//   - [NoTestHook]: production code holds no test hooks: no package variable that tests
//     assign, no unexported field that only tests write, no exported name documented as
//     being for tests.
//
// The command archlint/cmd/archlint runs them all (`go run
// ./internal/archlint/cmd/archlint ./...`); .ci/run calls it.
package archlint
