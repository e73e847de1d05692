// Package nodeproto is the protocol of testkit/multinode's node program
// (internal/nodeproc): the program writes one JSON object (a Line) per line on its
// standard output, and the test kit reads them. The program and the test kit share
// this package, so the two cannot drift apart; examples print what they like.
//
// The first line is a KindNode line naming the node. Then come a KindState line (the
// cluster state when the program subscribed), one KindEvent line per cluster event,
// KindUp when this member is Up, KindDowned when this member learns it was downed,
// KindStopped when its cluster services stop, and last KindTerminated when its actor
// system has terminated, just before the program exits. KindError reports a failure
// to start; the program then exits with status 1. Every line carries the wall-clock
// time it was written (Time, Unix nanoseconds), so that lines of several processes on
// one machine can be ordered.
package nodeproto
