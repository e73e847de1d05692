package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/pgtest"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/pgjournal"
	"github.com/troupe-go/troupe/serialization"
)

// The PostgreSQL scenarios run against the server named by the
// TROUPE_TEST_POSTGRES connection string, or else a throwaway server
// started from the PostgreSQL binaries on the machine, with fsync on. Each
// run works in a schema of its own, dropped at the end.
func init() {
	scenarios["persist-pg"] = scenario{100_000, runPersistPG}
	scenarios["persist-pg-latency"] = scenario{1_000, runPersistPGLatency}
	scenarios["recover-pg"] = scenario{1_000_000, runRecoverPG}
}

// startPersistence starts the persistence runtime on sys with store as
// journal and snapshot store: the one place these scenarios depend on how
// persistence is started.
func startPersistence(sys *actor.System, store *pgjournal.Store, reg *serialization.Registry) error {
	_, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: reg})
	return err
}

// pgRig is a system with persistence on a pgjournal store in a fresh schema.
type pgRig struct {
	sys        *actor.System
	store      *pgjournal.Store
	connString string
	schema     string
	release    func() // stops the throwaway server, if one was started
}

func newPGRig() (*pgRig, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target, release, err := pgtest.Acquire(ctx, pgtest.Options{Fsync: true})
	if errors.Is(err, pgtest.ErrNoPostgres) {
		return nil, fmt.Errorf("%w: set %s to a connection string, or install PostgreSQL", err, pgtest.EnvConnString)
	}
	if err != nil {
		return nil, err
	}
	r := &pgRig{connString: target.ConnString, schema: fmt.Sprintf("bench_%d", time.Now().UnixNano()), release: release}
	r.store, err = pgjournal.Open(ctx, pgjournal.Config{ConnString: r.connString, Schema: r.schema})
	if err != nil {
		release()
		return nil, err
	}
	reg := serialization.NewRegistry()
	if err == nil {
		err = serialization.Register[BenchEvent](reg, "bench.Event")
	}
	if err == nil {
		r.sys, err = newSystem()
	}
	if err == nil {
		err = startPersistence(r.sys, r.store, reg)
	}
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *pgRig) close() {
	if r.sys != nil {
		shutdown(r.sys)
	}
	_ = r.store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if conn, err := pgx.Connect(ctx, r.connString); err == nil {
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE")
		_ = conn.Close(ctx)
	}
	r.release()
}

// runPersistPG: 1,000 entities persisting 100-byte events concurrently, each
// answered after its commit; then the floor: plain pgx inserting the same
// number of rows in batches of the size the journal's group commit reached,
// with as many transactions in flight.
func runPersistPG(n int) (result, error) {
	rig, err := newPGRig()
	if err != nil {
		return nil, err
	}
	defer rig.close()
	const entities = 1000
	per := max(1, n/entities)
	var done sync.WaitGroup
	done.Add(entities)
	refs := make([]actor.Ref, entities)
	for i := range refs {
		id := fmt.Sprintf("writer-%d", i)
		ref, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity {
			return &writer{id: id, count: per, done: &done}
		}), id)
		if err != nil {
			return nil, err
		}
		refs[i] = ref
	}
	// Recovery (a snapshot query and an empty replay per entity) is not what this
	// scenario measures: wait until every writer has recovered.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ref := range refs {
		if _, err := actor.Ask[recovered](ctx, ref, recovered{}); err != nil {
			return nil, fmt.Errorf("recovery: %w", err)
		}
	}
	before := rig.store.Stats()
	r, err := measure(per*entities, func() error {
		for _, ref := range refs {
			_ = ref.Tell(startWriting{})
		}
		done.Wait()
		return nil
	})
	if err != nil {
		return nil, err
	}
	st := rig.store.Stats()
	events, commits := st.Events-before.Events, st.Commits-before.Commits
	if events != int64(per*entities) || st.Conflicts != 0 || st.FailedCommits != 0 {
		return nil, fmt.Errorf("the journal stored %d events of %d (stats %+v)", events, per*entities, st)
	}
	batch := max(1, int(events/max(1, commits)))
	floor, err := pgFloor(rig.connString, rig.schema, per*entities, entities, batch, pgjournal.DefaultWriteConcurrency)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	r["entities"] = entities
	r["events_per_commit"] = batch
	r["floor_ops_per_sec"] = round(floor, 0)
	r["pct_of_floor"] = round(100*r["ops_per_sec"].(float64)/floor, 1)
	return r, nil
}

// pgFloor inserts n rows (entities persistence ids, 100-byte payloads) with
// plain pgx: batches of batch rows, each one INSERT ... SELECT FROM unnest
// committed on its own, concurrency of them in flight. It returns rows per
// second.
func pgFloor(connString, schema string, n, entities, batch, concurrency int) (float64, error) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return 0, err
	}
	cfg.MaxConns = int32(concurrency)
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE floor_event (persistence_id bytea NOT NULL, sequence_nr bigint NOT NULL,
		payload bytea NOT NULL, PRIMARY KEY (persistence_id, sequence_nr))`); err != nil {
		return 0, err
	}
	pids := make([][]byte, entities)
	for i := range pids {
		pids[i] = fmt.Appendf(nil, "writer-%d", i)
	}
	payload := make([]byte, 100)
	next := make(chan int, n/batch+1) // the first row of each batch
	for first := 0; first < n; first += batch {
		next <- first
	}
	close(next)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, concurrency)
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := range next {
				var pidCol, payCol [][]byte
				var seqCol []int64
				for row := first; row < min(n, first+batch); row++ {
					pidCol = append(pidCol, pids[row%entities])
					seqCol = append(seqCol, int64(row/entities+1))
					payCol = append(payCol, payload)
				}
				if _, err := pool.Exec(ctx, `INSERT INTO floor_event (persistence_id, sequence_nr, payload)
					SELECT * FROM unnest($1::bytea[], $2::int8[], $3::bytea[])`, pidCol, seqCol, payCol); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		return 0, err
	}
	var stored int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM floor_event`).Scan(&stored); err != nil {
		return 0, err
	}
	if stored != n {
		return 0, fmt.Errorf("stored %d rows of %d", stored, n)
	}
	return float64(n) / took.Seconds(), nil
}

// runPersistPGLatency: one entity, sequential persist-then-handler.
func runPersistPGLatency(n int) (result, error) {
	rig, err := newPGRig()
	if err != nil {
		return nil, err
	}
	defer rig.close()
	var done sync.WaitGroup
	done.Add(1)
	w := &writer{id: "latency", count: n, done: &done, record: true}
	ref, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity { return w }), "latency")
	if err != nil {
		return nil, err
	}
	r, err := measure(n, func() error {
		_ = ref.Tell(startWriting{})
		done.Wait()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h, err := rig.store.HighestSequenceNr(context.Background(), "latency"); err != nil || h != uint64(n) {
		return nil, fmt.Errorf("the journal holds %d events of %d: %v", h, n, err)
	}
	lat := append([]time.Duration(nil), w.lat...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return nil, errors.New("no latencies recorded")
	}
	r["p50_us"] = round(float64(lat[len(lat)/2].Microseconds()), 0)
	r["p99_us"] = round(float64(lat[len(lat)*99/100].Microseconds()), 0)
	return r, nil
}

// runRecoverPG: replay n events of one entity.
func runRecoverPG(n int) (result, error) {
	rig, err := newPGRig()
	if err != nil {
		return nil, err
	}
	defer rig.close()
	reg := serialization.NewRegistry()
	if err := serialization.Register[BenchEvent](reg, "bench.Event"); err != nil {
		return nil, err
	}
	manifest, payload, err := reg.Marshal(BenchEvent{Data: make([]byte, 100)})
	if err != nil {
		return nil, err
	}
	const chunk = 10_000
	for seq := 1; seq <= n; seq += chunk {
		w := persistence.AtomicWrite{PersistenceID: "replayed"}
		for i := seq; i < seq+chunk && i <= n; i++ {
			w.Events = append(w.Events, persistence.Record{
				PersistenceID: "replayed", SequenceNr: uint64(i), Manifest: manifest, Payload: payload,
			})
		}
		res, err := rig.store.WriteMessages(context.Background(), []persistence.AtomicWrite{w})
		if err != nil {
			return nil, err
		}
		if res[0] != nil {
			return nil, res[0]
		}
	}
	done := make(chan int, 1)
	var got int
	r, err := measure(n, func() error {
		if _, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity { return &replayer{done: done} }), "replayer"); err != nil {
			return err
		}
		got = <-done
		return nil
	})
	if err == nil && got != n {
		return nil, fmt.Errorf("replayed %d events, want %d", got, n)
	}
	return r, err
}
