// Command kubernetes is a Troupe node for a Kubernetes Deployment: the pods find each
// other through the Kubernetes API (discovery.Kubernetes) and form one cluster, which
// runs a sharded Counter entity reachable over HTTP. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/discovery"
	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
)

// systemName is the actor system's name: the same on every node of a cluster.
const systemName = "troupe-demo"

// phaseTimeout bounds each phase of coordinated shutdown (the default, written out).
// Shutdown takes at most phaseTimeout for each phase that has tasks: phasesWithTasks
// of them in this program. They are service-unbind (the HTTP server, below),
// before-cluster-shutdown (the sharding coordinator's singleton hands over),
// cluster-sharding-shutdown-region (sharding hands its shards off),
// cluster-leave and cluster-shutdown (cluster), before-actor-system-terminate
// (management) and actor-system-terminate (remote). deployment.yaml's
// terminationGracePeriodSeconds must be at least their product (manifests_test.go
// checks it).
const (
	phaseTimeout    = 10 * time.Second
	phasesWithTasks = 7
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "troupe-demo:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := settingsFrom(os.Getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sys, err := actor.New(systemName, actor.Config{Slog: logger, PhaseTimeout: phaseTimeout})
	if err != nil {
		return err
	}
	// From now on SIGTERM (Kubernetes stopping the pod) runs coordinated shutdown:
	// shards are handed off, the member leaves, then the process ends.
	sys.ShutdownOnSignal()
	if err := start(sys, cfg, logger); err != nil {
		_ = sys.Shutdown(context.Background())
		return err
	}
	logger.Info("node started; looking for the other pods", "service", cfg.service, "pod", cfg.podIP)
	<-sys.Terminated()
	return sys.Shutdown(context.Background()) // the outcome of the shutdown that ran
}

// start starts the node's extensions: remote, cluster (bootstrapped from the pod
// list), distributed data, sharding with the Counter, the management server and the
// counters' HTTP API.
func start(sys *actor.System, cfg settings, logger *slog.Logger) error {
	reg := serialization.NewRegistry()
	if err := registerCounter(reg); err != nil {
		return err
	}
	if _, err := remote.Start(sys, remote.Config{ListenHost: cfg.podIP, ListenPort: cfg.remotePort, Registry: reg}); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	c, err := cluster.Start(sys, cluster.Config{
		GossipPort: cfg.gossipPort, // on the pod's IP, as remote
		Bootstrap: cluster.BootstrapConfig{
			// In the pod the API server, token, CA and namespace are found by
			// themselves; the Role in rbac.yaml lets the pod list pods.
			Discovery: discovery.Kubernetes{PodLabelSelector: "app=%s"},
			Lookup:    discovery.Lookup{Service: cfg.service, PortName: "gossip"},
			// The Deployment's replicas: the first cluster is formed only when all of
			// them are seen, so that two pods never form two clusters.
			RequiredContactPoints: cfg.requiredPoints,
		},
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if _, err := ddata.Start(context.Background(), sys, ddata.Config{Cluster: c, Registry: reg}); err != nil {
		return fmt.Errorf("ddata: %w", err)
	}
	s, err := sharding.Start(sys, sharding.Config{Registry: reg})
	if err != nil {
		return fmt.Errorf("sharding: %w", err)
	}
	node := cfg.podIP
	if _, err := s.Start("Counter", sharding.EntityConfig{
		Entity:         actor.PropsOf(func() actor.Actor { return &counter{node: node} }),
		NumberOfShards: 30,
	}); err != nil {
		return fmt.Errorf("sharding: %w", err)
	}
	// Probes come from the kubelet, kubectl port-forward from inside the pod: listen
	// on every interface. Writes (leave, down) stay off.
	if _, err := management.Start(sys, management.Config{
		Address: net.JoinHostPort("0.0.0.0", strconv.Itoa(cfg.managementPort)),
	}); err != nil {
		return fmt.Errorf("management: %w", err)
	}
	return serveCounters(sys, cfg.httpPort, logger)
}

// serveCounters serves the counters' HTTP API: POST /counters/{id} increments, GET
// /counters/{id} reads; both answer with the Count as JSON. The server stops taking
// requests in the service-unbind phase of coordinated shutdown, before the shards are
// handed off.
func serveCounters(sys *actor.System, port int, logger *slog.Logger) error {
	mux := http.NewServeMux()
	handle := func(msg any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			ref, err := sharding.EntityRefFor[any](sys, "Counter", sharding.EntityID(r.PathValue("id")))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			n, err := sharding.Ask[Count, any](ctx, ref, msg)
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(n)
		}
	}
	mux.HandleFunc("POST /counters/{id}", handle(Increment{}))
	mux.HandleFunc("GET /counters/{id}", handle(Get{}))
	l, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("counters' HTTP API: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("counters' HTTP API stopped", "error", err)
		}
	}()
	return sys.CoordinatedShutdown().AddTask(actor.PhaseServiceUnbind, "counters-http", srv.Shutdown)
}
