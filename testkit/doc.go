// Package testkit helps test actors: Probe, an actor that records what it receives and
// asserts on it with timeouts, and NewSystem, a per-test actor system that is shut down
// when the test ends and checked for leaked goroutines.
//
// Every timeout is dilated by the TROUPE_TEST_TIME_FACTOR environment variable, for slow
// machines. Probes synchronise on messages, so tests never need to sleep; timer-heavy
// behaviour can run in virtual time inside testing/synctest.
package testkit
