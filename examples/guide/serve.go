package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/persistence/pgjournal"
	"go.uber.org/zap"
)

// serve runs one node on the PostgreSQL journal until SIGTERM or an interrupt, which
// make it leave the cluster gracefully.
func serve(f flags, seeds []string, logger *zap.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	store, err := pgjournal.Open(ctx, pgjournal.Config{ConnString: f.postgres})
	cancel()
	if err != nil {
		return err
	}
	defer store.Close()

	n, err := startNode(nodeConfig{name: f.node, host: f.host, remotePort: f.remotePort, gossipPort: f.gossipPort,
		seeds: seeds, minMembers: f.minMembers, journal: store, snapshots: store, logger: logger})
	if err != nil {
		return err
	}
	n.sys.ShutdownOnSignal() // SIGTERM: hand off shards, hand over the singleton, leave
	m, err := management.Start(n.sys, management.Config{Address: f.management})
	if err != nil {
		_ = n.sys.Shutdown(context.Background())
		return err
	}
	ln, err := net.Listen("tcp", f.http)
	if err != nil {
		_ = n.sys.Shutdown(context.Background())
		return err
	}
	api := &http.Server{Handler: n.api(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := api.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("bank API", zap.Error(err))
			_ = n.sys.Shutdown(context.Background())
		}
	}()
	fmt.Printf("%s: gossip %s, bank API http://%s, management %s\n", f.node, n.cluster.GossipAddress(), f.http, m.URL())

	<-n.sys.Terminated()
	_ = api.Close()
	fmt.Printf("%s: left the cluster and stopped\n", f.node)
	return nil
}

// api is the bank's HTTP API:
//
//	POST /accounts?owner=ann            opens an account
//	POST /accounts/{id}/deposit?amount=100
//	POST /accounts/{id}/withdraw?amount=30
//	GET  /accounts/{id}                 the balance
//	GET  /transactions                  deposits and withdrawals, cluster-wide
func (n *node) api() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /accounts", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(ctx context.Context) (any, error) { return n.open(ctx, r.FormValue("owner")) })
	})
	mux.HandleFunc("POST /accounts/{id}/{op}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(ctx context.Context) (any, error) {
			amount, err := strconv.ParseInt(r.FormValue("amount"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("amount: %w", err)
			}
			switch r.PathValue("op") {
			case "deposit":
				return n.send(ctx, r.PathValue("id"), Deposit{Amount: amount})
			case "withdraw":
				return n.send(ctx, r.PathValue("id"), Withdraw{Amount: amount})
			}
			return nil, fmt.Errorf("unknown operation %q", r.PathValue("op"))
		})
	})
	mux.HandleFunc("GET /accounts/{id}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(ctx context.Context) (any, error) { return n.send(ctx, r.PathValue("id"), GetBalance{}) })
	})
	mux.HandleFunc("GET /transactions", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(ctx context.Context) (any, error) { return n.total(ctx) })
	})
	return mux
}

// answer runs do with a deadline and writes its result as JSON, or its error.
func answer(w http.ResponseWriter, r *http.Request, do func(ctx context.Context) (any, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	v, err := do(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
