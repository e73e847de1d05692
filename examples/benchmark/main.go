// Command benchmark measures Troupe's headline figures. Each scenario prints exactly
// one JSON line with the keys scenario, n, seconds, ops_per_sec, ns_per_op and
// allocs_per_op (plus scenario-specific keys such as bytes_per_actor). A scenario
// measured against a floor measures the floor in the same process: tell-vs-chan
// alternates tell and a buffered channel and adds floor_ops_per_sec and the ratio.
//
//	go run ./examples/benchmark -scenario all
//	go run ./examples/benchmark -scenario tell -n 2000000
//	go run ./examples/benchmark -scenario tell -metrics   # with the OpenTelemetry SDK and a Prometheus exporter
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"time"
)

// result is one JSON line.
type result map[string]any

// scenario runs with n operations (0 means its default) and returns its figures.
type scenario struct {
	defaultN int
	run      func(n int) (result, error)
}

var scenarios = map[string]scenario{
	"chan":             {2_000_000, runChan},
	"chan-roundtrip":   {200_000, runChanRoundTrip},
	"tell":             {2_000_000, runTell},
	"tell-parallel":    {2_000_000, runTellParallel},
	"tell-vs-chan":     {2_000_000, runTellVsChan},
	"router-pool":      {2_000_000, runRouterPool},
	"ask":              {2_000_000, runAsk}, // 200,000 ran 50 ms, most of it the heap's first growth
	"spawn":            {100_000, runSpawn},
	"spawn-1m":         {1_000_000, runSpawn},
	"spawn-warm":       {1_000_000, runSpawnWarm},
	"alloc-floor":      {1_000_000, runAllocFloor},
	"persist":          {200_000, runPersist},
	"persist-latency":  {1_000, runPersistLatency},
	"recover":          {1_000_000, runRecover},
	"remote-tell":      {2_000_000, runRemoteTell},
	"remote-ask":       {20_000, runRemoteAsk},
	"tcp-floor":        {1_000_000, runTCPFloor},
	"remote-2proc":     {1_000_000, runRemote2Proc},
	"cluster-form":     {5, runClusterForm},
	"cluster-failover": {5, runClusterFailover},
	"cluster-form-25":  {25, runClusterForm},
}

func main() {
	if runPeerIfAsked() { // the peer process of tcp-floor and remote-2proc
		return
	}
	name := flag.String("scenario", "all", "scenario to run, or all: "+strings.Join(names(), ", "))
	n := flag.Int("n", 0, "operations (0: the scenario's default)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memprofile := flag.String("memprofile", "", "record every allocation and write the allocation profile to this file")
	traceFile := flag.String("trace", "", "write an execution trace (runtime/trace) of the run to this file")
	flag.Parse()
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmark:", err)
			os.Exit(1)
		}
		defer trace.Stop()
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 1
		defer writeAllocs(*memprofile)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmark:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "benchmark:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}

	list := []string{*name}
	if *name == "all" {
		list = names()
	}
	for _, s := range list {
		sc, ok := scenarios[s]
		if !ok {
			fmt.Fprintf(os.Stderr, "benchmark: unknown scenario %q (have %s)\n", s, strings.Join(names(), ", "))
			pprof.StopCPUProfile()
			os.Exit(2)
		}
		count := *n
		if count <= 0 {
			count = sc.defaultN
		}
		runtime.GC()
		r, err := sc.run(count)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchmark: %s: %v\n", s, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		r["scenario"] = s
		if *withMetrics {
			r["metrics"] = true
		}
		line, _ := json.Marshal(r)
		fmt.Println(string(line))
	}
	scrapeMetrics()
}

// writeAllocs writes the allocation profile to path.
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
	}
}

func names() []string {
	out := make([]string, 0, len(scenarios))
	for k := range scenarios {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// measure times f and counts its allocations, returning the standard keys.
func measure(n int, f func() error) (result, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	if err := f(); err != nil {
		return nil, err
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	secs := took.Seconds()
	return result{
		"n":             n,
		"seconds":       round(secs, 6),
		"ops_per_sec":   round(float64(n)/secs, 0),
		"ns_per_op":     round(float64(took.Nanoseconds())/float64(n), 2),
		"allocs_per_op": round(float64(after.Mallocs-before.Mallocs)/float64(n), 4),
	}, nil
}

func round(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
