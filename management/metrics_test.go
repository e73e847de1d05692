package management_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/testkit"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestMetricsRouteServesThePrometheusExporter attaches OpenTelemetry's Prometheus
// exporter to the system's MeterProvider and its registry's handler to Config.Metrics,
// and scrapes GET /metrics as Prometheus would: the runtime's instruments are there,
// with the counts of what the test did.
func TestMetricsRouteServesThePrometheusExporter(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(t.Context()) })
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: mp})

	probe := testkit.NewProbe(t, sys)
	for range 3 {
		ref, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "")
		if err != nil {
			t.Fatal(err)
		}
		probe.Watch(ref)
		_ = sys.Stop(ref)
		probe.ExpectTerminated(ref)
	}
	m, err := management.Start(sys, management.Config{Address: "127.0.0.1:0",
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(m.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	text := string(body)
	for _, want := range []string{"troupe_actor_spawned", "troupe_actor_stopped", "troupe_actor_live", "troupe_actor_dead_letters"} {
		if !strings.Contains(text, want) {
			t.Errorf("the scrape has no %s", want)
		}
	}
	stopped := "troupe_actor_stopped (none)"
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "troupe_actor_stopped") {
			stopped = strings.TrimSpace(line)
		}
	}
	// The probe and the system's own actors run too; the three stopped ones count.
	f := strings.Fields(stopped)
	if n, err := strconv.ParseFloat(f[len(f)-1], 64); len(f) < 2 || err != nil || n < 3 {
		t.Fatalf("troupe_actor_stopped line %q, want a count of at least 3", stopped)
	}
}
