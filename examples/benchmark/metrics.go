package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/troupe-go/troupe/actor"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// withMetrics is the -metrics flag: every system of the run gets the OpenTelemetry
// SDK's MeterProvider with a Prometheus exporter attached, and its TracerProvider
// with a sampler that records nothing (so tracing is on, as in a service that samples
// a few requests, but no span is kept), so that a scenario can be compared with and
// without them (-scenario tell -metrics against -scenario tell).
var withMetrics = flag.Bool("metrics", false, "turn metrics and tracing on: the OpenTelemetry SDK's MeterProvider with a Prometheus exporter, scraped every second, and its TracerProvider with a sampler that records nothing")

// meters holds the provider and the registry it exports to, once -metrics made them,
// and the scraper that gathers the registry every second while the run lasts (as a
// Prometheus server would, more often than its usual 15s).
var meters struct {
	mp   *sdkmetric.MeterProvider
	tp   *sdktrace.TracerProvider
	reg  *prometheus.Registry
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	most int // the most series one scrape found
}

// baseConfig returns the actor.Config every system of the run starts from: with
// -metrics, the shared MeterProvider and TracerProvider.
func baseConfig() actor.Config {
	if !*withMetrics {
		return actor.Config{}
	}
	if meters.mp == nil {
		meters.reg = prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(meters.reg))
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmark: prometheus exporter:", err)
			os.Exit(1)
		}
		meters.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		meters.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		meters.stop, meters.done = make(chan struct{}), make(chan struct{})
		go scrapeEverySecond()
	}
	return actor.Config{MeterProvider: meters.mp, TracerProvider: meters.tp}
}

// scrapeEverySecond gathers the registry every second until scrapeMetrics stops it.
func scrapeEverySecond() {
	defer close(meters.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-meters.stop:
			return
		case <-t.C:
			scrapeOnce()
		}
	}
}

// scrapeOnce gathers the registry, as a Prometheus scrape would.
func scrapeOnce() {
	families, err := meters.reg.Gather()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark: scraping the metrics:", err)
	}
	series := 0
	for _, f := range families {
		series += len(f.GetMetric())
	}
	meters.mu.Lock()
	meters.most = max(meters.most, series)
	meters.mu.Unlock()
}

// scrapeMetrics stops the scraper, reports on standard error the most series a
// scrape found, and shuts the provider down.
func scrapeMetrics() {
	if meters.mp == nil {
		return
	}
	close(meters.stop)
	<-meters.done
	scrapeOnce()
	fmt.Fprintf(os.Stderr, "benchmark: metrics on: at most %d series in a scrape (every second)\n", meters.most)
	_ = meters.mp.Shutdown(context.Background())
	_ = meters.tp.Shutdown(context.Background())
}
