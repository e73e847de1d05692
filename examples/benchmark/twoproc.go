package main

// The two-process scenarios: tcp-floor (plain Go TCP between this process and a peer
// process) and remote-2proc (two Troupe systems in those processes, measured against
// the floor in the same run). The peer is this program again, started with peerEnv
// set; it serves both the plain TCP side and the Troupe side until its standard input
// closes.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
)

// peerEnv, set in the environment, makes this program the peer process of the
// two-process scenarios.
const peerEnv = "TROUPE_BENCH_PEER"

// peerTraceEnv names a file to which the peer process writes an execution trace
// (runtime/trace) of its whole run, as -trace does for this process.
const peerTraceEnv = "TROUPE_BENCH_PEER_TRACE"

const (
	twoProcRounds = 5      // interleaved rounds; figures are medians over them
	rttPerRound   = 2_000  // sequential round trips per round
	streamEvery   = 10_000 // the receiver acknowledges every streamEvery messages
	streamWindow  = 60_000 // the sender keeps at most this many unacknowledged
	floorReadBuf  = 64 << 10
	floorWriteBuf = 64 << 10
	floorModeEcho = 'e'
	floorModeSink = 's'
	peerActorEcho = "echo"
	peerActorSink = "sink"
)

// runPeerIfAsked runs this process as the peer when peerEnv is set, and reports
// whether it did.
func runPeerIfAsked() bool {
	if os.Getenv(peerEnv) == "" {
		return false
	}
	if err := runPeer(); err != nil {
		fmt.Fprintln(os.Stderr, "benchmark peer:", err)
		os.Exit(1)
	}
	return true
}

// runPeer serves the floor's echo and sink connections and a Troupe system with an
// echo and a sink actor, prints "tcp-address echo-uri sink-uri" and runs until
// standard input closes.
func runPeer() error {
	if name := os.Getenv(peerTraceEnv); name != "" {
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go serveFloor(ln)
	sys, _, err := startWireSystem("peer")
	if err != nil {
		return err
	}
	defer shutdown(sys)
	echo, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wireMsg); ok {
			ctx.Respond(m)
		}
	}), peerActorEcho)
	if err != nil {
		return err
	}
	var count int64
	sink, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*wireMsg); ok {
			count++
			if count%streamEvery == 0 {
				ctx.Respond(&wireAck{N: count})
			}
		}
	}), peerActorSink)
	if err != nil {
		return err
	}
	// Full paths with uids, as refs that travel in messages have them: the receiving
	// side caches what they resolve to. (A path without a uid is looked up again for
	// every message, since another actor may have taken the path meanwhile.)
	fmt.Println(ln.Addr().String(), echo.URI(), sink.URI())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// serveFloor accepts the floor's connections: the first byte chooses echo (every
// frame is written back as it came) or sink (frames are counted, and every
// streamEvery-th is acknowledged with an 8-byte count).
func serveFloor(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.(*net.TCPConn).SetNoDelay(true)
			br := bufio.NewReaderSize(c, floorReadBuf)
			mode, err := br.ReadByte()
			if err != nil {
				return
			}
			switch mode {
			case floorModeEcho:
				_ = floorEcho(c, br)
			case floorModeSink:
				_ = floorSink(c, br)
			}
		}()
	}
}

func floorEcho(c net.Conn, br *bufio.Reader) error {
	for {
		frame, err := readFrame(br)
		if err != nil {
			return err
		}
		if _, err := c.Write(frame); err != nil {
			return err
		}
	}
}

func floorSink(c net.Conn, br *bufio.Reader) error {
	var count int64
	ack := make([]byte, 12)
	binary.BigEndian.PutUint32(ack, 8)
	for {
		if _, err := readFrame(br); err != nil {
			return err
		}
		count++
		if count%streamEvery == 0 {
			binary.BigEndian.PutUint64(ack[4:], uint64(count))
			if _, err := c.Write(ack); err != nil {
				return err
			}
		}
	}
}

// readFrame returns the next length-prefixed frame, header included, valid until the
// next read.
func readFrame(br *bufio.Reader) ([]byte, error) {
	hdr, err := br.Peek(4)
	if err != nil {
		return nil, err
	}
	n := 4 + int(binary.BigEndian.Uint32(hdr))
	if n > br.Size() {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	frame, err := br.Peek(n)
	if err != nil {
		return nil, err
	}
	_, _ = br.Discard(n)
	return frame, nil
}

// peerProcess is the running peer.
type peerProcess struct {
	cmd              *exec.Cmd
	stdin            io.WriteCloser
	tcpAddr          string
	echoURI, sinkURI string
}

func startPeer() (*peerProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), peerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &peerProcess{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("peer process: %w", err)
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		p.stop()
		return nil, fmt.Errorf("peer process said %q", line)
	}
	p.tcpAddr, p.echoURI, p.sinkURI = f[0], f[1], f[2]
	return p, nil
}

func (p *peerProcess) stop() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
}

// floorFrameBytes is the size on the wire of remote-2proc's stream messages: the
// frame header (length and kind), three one-byte dictionary references (recipient,
// sender, type) and the msgpack payload.
func floorFrameBytes() (int, error) {
	_, payload, err := wireRegistry().Marshal(&wireMsg{Seq: 1_000_000, Body: make([]byte, 100)})
	if err != nil {
		return 0, err
	}
	return 4 + 1 + 3 + len(payload), nil
}

// floorClient is the plain TCP side of a scenario.
type floorClient struct {
	echo, sink net.Conn
	echoR      *bufio.Reader
	frame      []byte
}

func dialFloor(addr string, frameBytes int) (*floorClient, error) {
	dial := func(mode byte) (net.Conn, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		_ = c.(*net.TCPConn).SetNoDelay(true)
		if _, err := c.Write([]byte{mode}); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
	echo, err := dial(floorModeEcho)
	if err != nil {
		return nil, err
	}
	sink, err := dial(floorModeSink)
	if err != nil {
		_ = echo.Close()
		return nil, err
	}
	frame := make([]byte, frameBytes)
	binary.BigEndian.PutUint32(frame, uint32(frameBytes-4))
	return &floorClient{echo: echo, sink: sink, echoR: bufio.NewReaderSize(echo, floorReadBuf), frame: frame}, nil
}

func (f *floorClient) close() {
	_ = f.echo.Close()
	_ = f.sink.Close()
}

// rtt measures n sequential round trips of one frame.
func (f *floorClient) rtt(n int) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	_ = f.echo.SetDeadline(time.Now().Add(time.Minute))
	for i := range n {
		t0 := time.Now()
		if _, err := f.echo.Write(f.frame); err != nil {
			return nil, err
		}
		got, err := readFrame(f.echoR)
		if err != nil {
			return nil, err
		}
		if len(got) != len(f.frame) {
			return nil, fmt.Errorf("echo of %d bytes, sent %d", len(got), len(f.frame))
		}
		lat[i] = time.Since(t0)
	}
	return lat, nil
}

// stream sends n frames through a buffered writer, keeping at most streamWindow
// unacknowledged, and returns when the receiver has counted them all. sent is the
// number the connection carried before.
func (f *floorClient) stream(n int, sent int64) (time.Duration, error) {
	bw := bufio.NewWriterSize(f.sink, floorWriteBuf)
	var ack [12]byte
	have := sent
	readAck := func() error {
		_ = f.sink.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(f.sink, ack[:]); err != nil {
			return fmt.Errorf("floor stream: %w", err)
		}
		have = int64(binary.BigEndian.Uint64(ack[4:]))
		return nil
	}
	start := time.Now()
	total := sent + int64(n)
	for i := sent + 1; i <= total; i++ {
		for i-have > streamWindow {
			if err := bw.Flush(); err != nil {
				return 0, err
			}
			if err := readAck(); err != nil {
				return 0, err
			}
		}
		binary.BigEndian.PutUint64(f.frame[8:], uint64(i))
		if _, err := bw.Write(f.frame); err != nil {
			return 0, err
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	for have < total {
		if err := readAck(); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// wireClient is the Troupe side of remote-2proc.
type wireClient struct {
	sys        *actor.System
	r          *remote.Remote
	echo, sink actor.Ref
	acker      actor.Ref
	acked      chan int64
	msg        *wireMsg
}

func dialWire(echoURI, sinkURI string) (*wireClient, error) {
	sys, r, err := startWireSystem("bench")
	if err != nil {
		return nil, err
	}
	w := &wireClient{sys: sys, r: r, acked: make(chan int64, 1024), msg: &wireMsg{Body: make([]byte, 100)}}
	if w.acker, err = sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wireAck); ok {
			w.acked <- m.N
		}
	}), "acker"); err != nil {
		shutdown(sys)
		return nil, err
	}
	if w.echo, err = sys.Resolve(echoURI); err == nil {
		w.sink, err = sys.Resolve(sinkURI)
	}
	if err != nil {
		shutdown(sys)
		return nil, err
	}
	return w, nil
}

// rtt measures n sequential asks of the peer's echo actor.
func (w *wireClient) rtt(n int) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lat := make([]time.Duration, n)
	for i := range n {
		t0 := time.Now()
		if _, err := actor.Ask[*wireMsg](ctx, w.echo, w.msg); err != nil {
			return nil, err
		}
		lat[i] = time.Since(t0)
	}
	return lat, nil
}

// stream tells the peer's sink n messages, keeping at most streamWindow
// unacknowledged, and returns when the sink has counted them all. sent is the number
// sent to the sink before.
func (w *wireClient) stream(n int, sent int64) (time.Duration, error) {
	start := time.Now()
	have := sent
	total := sent + int64(n)
	for i := sent + 1; i <= total; i++ {
		for i-have > streamWindow {
			var err error
			if have, err = next(w.acked); err != nil {
				return 0, fmt.Errorf("remote stream: %w", err)
			}
		}
		w.msg.Seq = i
		if err := w.sink.Send(w.msg, w.acker); err != nil {
			return 0, err
		}
	}
	for have < total {
		var err error
		if have, err = next(w.acked); err != nil {
			return 0, fmt.Errorf("remote stream: %w", err)
		}
	}
	return time.Since(start), nil
}

// twoProc holds what a two-process scenario measured, round by round.
type twoProc struct {
	frameBytes            int
	floorRTT, wireRTT     []time.Duration // every round trip
	floorRates, wireRates []float64       // messages per second, per round
	floorSecs, wireSecs   float64         // stream time, all rounds
	wireBytesPerMsg       float64
	streamN               int // messages per round
	wireAllocsPerMsg      float64
	wireCPUPerMsg         time.Duration
}

// runTwoProc starts the peer and runs twoProcRounds rounds of: floor round trips,
// Troupe round trips (withWire), floor stream, Troupe stream (withWire).
func runTwoProc(n int, withWire bool) (*twoProc, error) {
	n = max(n/streamEvery, 1) * streamEvery
	frameBytes, err := floorFrameBytes()
	if err != nil {
		return nil, err
	}
	peer, err := startPeer()
	if err != nil {
		return nil, err
	}
	defer peer.stop()
	floor, err := dialFloor(peer.tcpAddr, frameBytes)
	if err != nil {
		return nil, err
	}
	defer floor.close()
	var wire *wireClient
	if withWire {
		if wire, err = dialWire(peer.echoURI, peer.sinkURI); err != nil {
			return nil, err
		}
		defer shutdown(wire.sys)
	}
	res := &twoProc{frameBytes: frameBytes, streamN: n}

	// Warm up both: connections, dictionaries, buffers.
	var floorSent, wireSent int64
	if _, err := floor.rtt(100); err != nil {
		return nil, err
	}
	if _, err := floor.stream(streamEvery, floorSent); err != nil {
		return nil, err
	}
	floorSent += streamEvery
	if wire != nil {
		if _, err := wire.rtt(100); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		if _, err := wire.stream(streamEvery, wireSent); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		wireSent += streamEvery
	}

	var mallocs uint64
	var cpu time.Duration
	var bytesOut, msgsOut uint64
	for range twoProcRounds {
		lat, err := floor.rtt(rttPerRound)
		if err != nil {
			return nil, err
		}
		res.floorRTT = append(res.floorRTT, lat...)
		if wire != nil {
			if lat, err = wire.rtt(rttPerRound); err != nil {
				return nil, err
			}
			res.wireRTT = append(res.wireRTT, lat...)
		}
		took, err := floor.stream(n, floorSent)
		if err != nil {
			return nil, err
		}
		floorSent += int64(n)
		res.floorSecs += took.Seconds()
		res.floorRates = append(res.floorRates, float64(n)/took.Seconds())
		if wire == nil {
			continue
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s0 := wire.r.Stats()
		cpu0 := processCPU()
		if took, err = wire.stream(n, wireSent); err != nil {
			return nil, err
		}
		cpu += processCPU() - cpu0
		s1 := wire.r.Stats()
		runtime.ReadMemStats(&after)
		mallocs += after.Mallocs - before.Mallocs
		bytesOut += s1.BytesOut - s0.BytesOut
		msgsOut += s1.MessagesOut - s0.MessagesOut
		wireSent += int64(n)
		res.wireSecs += took.Seconds()
		res.wireRates = append(res.wireRates, float64(n)/took.Seconds())
	}
	if msgsOut > 0 {
		res.wireBytesPerMsg = float64(bytesOut) / float64(msgsOut)
	}
	total := float64(twoProcRounds * n)
	res.wireAllocsPerMsg = float64(mallocs) / total
	res.wireCPUPerMsg = time.Duration(float64(cpu) / total)
	return res, nil
}

// processCPU returns the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func medianDuration(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func quantileDuration(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*q)]
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func roundAll(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = round(x, 0)
	}
	return out
}

func micros(d time.Duration) float64 { return round(float64(d.Nanoseconds())/1e3, 1) }

// streamResult fills the standard keys from a stream's per-round rates.
func streamResult(n int, secs float64, rates []float64) result {
	rate := median(rates)
	return result{
		"n":                   n,
		"seconds":             round(secs, 6),
		"ops_per_sec":         round(rate, 0),
		"ns_per_op":           round(1e9/rate, 2),
		"stream_msgs_per_sec": round(rate, 0),
		"stream_rounds":       roundAll(rates),
	}
}

// runTCPFloor measures plain Go TCP between two processes on loopback: sequential
// round trips of one frame, and a one-way stream of n frames per round through a
// buffered writer, with frames the size of remote-2proc's messages.
func runTCPFloor(n int) (result, error) {
	tp, err := runTwoProc(n, false)
	if err != nil {
		return nil, err
	}
	res := streamResult(twoProcRounds*tp.streamN, tp.floorSecs, tp.floorRates)
	res["rtt_us"] = micros(medianDuration(tp.floorRTT))
	res["p99_us"] = micros(quantileDuration(tp.floorRTT, 0.99))
	res["frame_bytes"] = tp.frameBytes
	return res, nil
}

// runRemote2Proc measures two Troupe systems in two processes on loopback, asks and
// a one-way stream of tells, interleaved round by round with the same measurements
// over plain TCP (tcp-floor), and reports both and their ratios.
func runRemote2Proc(n int) (result, error) {
	tp, err := runTwoProc(n, true)
	if err != nil {
		return nil, err
	}
	if len(tp.wireRates) == 0 {
		return nil, errors.New("no rounds")
	}
	res := streamResult(twoProcRounds*tp.streamN, tp.wireSecs, tp.wireRates)
	rtt, floorRTT := medianDuration(tp.wireRTT), medianDuration(tp.floorRTT)
	floorRate := median(tp.floorRates)
	res["rtt_us"] = micros(rtt)
	res["p99_us"] = micros(quantileDuration(tp.wireRTT, 0.99))
	res["floor_rtt_us"] = micros(floorRTT)
	res["floor_stream_msgs_per_sec"] = round(floorRate, 0)
	res["floor_stream_rounds"] = roundAll(tp.floorRates)
	res["rtt_ratio"] = round(float64(rtt)/float64(floorRTT), 2)
	res["stream_ratio"] = round(res["stream_msgs_per_sec"].(float64)/floorRate, 3)
	res["frame_bytes"] = tp.frameBytes
	res["wire_bytes_per_msg"] = round(tp.wireBytesPerMsg, 1)
	res["sender_allocs_per_op"] = round(tp.wireAllocsPerMsg, 4)
	res["sender_cpu_ns_per_op"] = round(float64(tp.wireCPUPerMsg.Nanoseconds()), 0)
	return res, nil
}

// wireRegistry registers the remote scenarios' messages.
func wireRegistry() *serialization.Registry {
	reg := serialization.NewRegistry()
	_ = serialization.Register[*wireMsg](reg, "bench.WireMsg")
	_ = serialization.Register[*wireAck](reg, "bench.WireAck")
	return reg
}

// startWireSystem starts a system with remoting on 127.0.0.1. Streams keep up to
// streamWindow messages in flight, about what the default outbound queue holds: with
// backpressure a full queue makes the sender wait instead of failing.
func startWireSystem(name string) (*actor.System, *remote.Remote, error) {
	sys, err := actor.New(name, baseConfig())
	if err != nil {
		return nil, nil, err
	}
	r, err := remote.Start(sys, remote.Config{Registry: wireRegistry(), BackpressureTimeout: 10 * time.Second})
	if err != nil {
		shutdown(sys)
		return nil, nil, err
	}
	return sys, r, nil
}
