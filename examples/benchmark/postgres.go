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
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/pgjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit/pgtest"
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
	done := newWriters(entities)
	refs := make([]actor.Ref, entities)
	for i := range refs {
		id := fmt.Sprintf("writer-%d", i)
		ref, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity {
			return &writer{id: id, count: per, done: done}
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
		return done.wait()
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
	row, err := journalRow(rig.connString, rig.schema)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	floor, err := pgFloor(rig.connString, rig.schema, per*entities, entities, batch, pgjournal.DefaultWriteConcurrency, &row)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	narrow, err := pgFloor(rig.connString, rig.schema, per*entities, entities, batch, pgjournal.DefaultWriteConcurrency, nil)
	if err != nil {
		return nil, fmt.Errorf("narrow floor: %w", err)
	}
	r["entities"] = entities
	r["events_per_commit"] = batch
	r["floor_ops_per_sec"] = round(floor, 0)
	r["pct_of_floor"] = round(100*r["ops_per_sec"].(float64)/floor, 1)
	r["narrow_floor_ops_per_sec"] = round(narrow, 0)
	r["pct_of_narrow_floor"] = round(100*r["ops_per_sec"].(float64)/narrow, 1)
	return r, nil
}

// floorColumns are the columns of the journal's rows, as the floor copies
// them.
var floorColumns = []string{"persistence_id", "sequence_nr", "written_at", "manifest", "writer_id", "tags", "checksum", "payload"}

// floorRow is the content of the rows the floor inserts: that of an event
// the journal stored in the same run.
type floorRow struct {
	manifest, writer, payload []byte
}

// journalRow reads one event the journal stored.
func journalRow(connString, schema string) (floorRow, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return floorRow{}, err
	}
	defer func() { _ = conn.Close(ctx) }()
	var row floorRow
	err = conn.QueryRow(ctx, `SELECT manifest, writer_id, payload FROM `+pgx.Identifier{schema, "troupe_event"}.Sanitize()+` LIMIT 1`).
		Scan(&row.manifest, &row.writer, &row.payload)
	return row, err
}

// pgFloor inserts n rows with plain pgx: batches of batch rows, each
// committed on its own, concurrency of them in flight. It returns rows per
// second. With row, the rows are the journal's: the columns of
// troupe_event, its primary key, and row's manifest, writer id and payload
// in every row (the "same rows" the journal's target is measured against),
// each batch sent with pgx's CopyFrom, the fastest way pgx has. Without,
// the rows are narrow (persistence id, sequence number and a 100-byte
// payload) and each batch one INSERT ... SELECT FROM unnest: the floor of
// the measurements before 2026-11-28.
func pgFloor(connString, schema string, n, entities, batch, concurrency int, row *floorRow) (float64, error) {
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
	table := `CREATE TABLE floor_event (persistence_id bytea NOT NULL, sequence_nr bigint NOT NULL,
		payload bytea NOT NULL, PRIMARY KEY (persistence_id, sequence_nr))`
	insert := `INSERT INTO floor_event (persistence_id, sequence_nr, payload)
		SELECT * FROM unnest($1::bytea[], $2::int8[], $3::bytea[])`
	if row != nil {
		table = `CREATE TABLE floor_event (persistence_id bytea NOT NULL, sequence_nr bigint NOT NULL,
			written_at bigint NOT NULL, manifest bytea NOT NULL, writer_id bytea NOT NULL, tags bytea,
			checksum integer NOT NULL, payload bytea NOT NULL, PRIMARY KEY (persistence_id, sequence_nr))`
	}
	if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS floor_event"); err != nil {
		return 0, err
	}
	if _, err := pool.Exec(ctx, table); err != nil {
		return 0, err
	}
	pids := make([][]byte, entities)
	for i := range pids {
		pids[i] = fmt.Appendf(nil, "writer-%d", i)
	}
	payload := make([]byte, 100)
	if row != nil {
		payload = row.payload
	}
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
				if row != nil {
					rows := make([][]any, 0, batch)
					for i := first; i < min(n, first+batch); i++ {
						rows = append(rows, []any{pids[i%entities], int64(i/entities + 1), time.Now().UnixNano(),
							row.manifest, row.writer, nil, int32(i), payload})
					}
					if _, err := pool.CopyFrom(ctx, pgx.Identifier{"floor_event"}, floorColumns, pgx.CopyFromRows(rows)); err != nil {
						errs <- err
						return
					}
					continue
				}
				var pidCol, payCol [][]byte
				var seqCol []int64
				for i := first; i < min(n, first+batch); i++ {
					pidCol = append(pidCol, pids[i%entities])
					seqCol = append(seqCol, int64(i/entities+1))
					payCol = append(payCol, payload)
				}
				if _, err := pool.Exec(ctx, insert, pidCol, seqCol, payCol); err != nil {
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
	done := newWriters(1)
	w := &writer{id: "latency", count: n, done: done, record: true}
	ref, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity { return w }), "latency")
	if err != nil {
		return nil, err
	}
	r, err := measure(n, func() error {
		_ = ref.Tell(startWriting{})
		return done.wait()
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
