package pglease

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/lease"
)

// TestInvalidConfig: bad settings and bad configs fail New with ErrInvalidConfig, which
// is also a lease.ErrInvalidConfig, before any connection is made.
func TestInvalidConfig(t *testing.T) {
	ctx := testContext(t)
	pool, err := pgxpool.New(ctx, target.ConnString) // not connected until used
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ok := lease.Settings{LeaseName: "x", OwnerName: "a"}
	with := func(edit func(*lease.Settings)) lease.Settings {
		s := ok
		edit(&s)
		return s
	}
	cs := Config{ConnString: target.ConnString}
	cases := []struct {
		name     string
		settings lease.Settings
		cfg      Config
	}{
		{"no lease name", with(func(s *lease.Settings) { s.LeaseName = "" }), cs},
		{"no owner", with(func(s *lease.Settings) { s.OwnerName = "" }), cs},
		{"timeout not above interval", with(func(s *lease.Settings) { s.HeartbeatInterval, s.HeartbeatTimeout = time.Second, time.Second }), cs},
		{"negative duration", with(func(s *lease.Settings) { s.OperationTimeout = -1 }), cs},
		{"NUL in the owner", with(func(s *lease.Settings) { s.OwnerName = "a\x00b" }), cs},
		{"invalid UTF-8 in the name", with(func(s *lease.Settings) { s.LeaseName = "\xff" }), cs},
		{"neither connection string nor pool", ok, Config{}},
		{"both connection string and pool", ok, Config{ConnString: target.ConnString, Pool: pool}},
		{"negative margin", ok, Config{ConnString: target.ConnString, SafetyMargin: -time.Second}},
		{"negative setup timeout", ok, Config{ConnString: target.ConnString, SetupTimeout: -time.Second}},
		{"margin leaves no room", with(func(s *lease.Settings) { s.HeartbeatInterval, s.HeartbeatTimeout = time.Second, 2*time.Second }),
			Config{ConnString: target.ConnString, SafetyMargin: time.Second}},
		{"schema too long", ok, Config{ConnString: target.ConnString, Schema: strings.Repeat("s", 64)}},
		{"connection string does not parse", ok, Config{ConnString: "postgres://%zz"}},
		{"bad port", ok, Config{ConnString: "host=/tmp port=notaport"}},
	}
	for _, c := range cases {
		l, err := New(ctx, c.settings, c.cfg)
		if l != nil {
			l.Close()
		}
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, lease.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", c.name, err)
		}
	}
	if err := (Config{Pool: pool}).Validate(); err != nil {
		t.Errorf("a config with a pool: %v", err)
	}
	// The password stays out of the message.
	_, err = New(ctx, ok, Config{ConnString: "postgres://u:secret@host:badport/db"})
	if !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), "secret") {
		t.Errorf("New with a bad port: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := New(cancelled, ok, cs); !errors.Is(err, context.Canceled) {
		t.Errorf("New with a cancelled context: %v", err)
	}
}

// TestUnreachable: a refused connection and a server that never answers both fail New
// with lease.ErrUnavailable within the setup timeout, naming the address.
func TestUnreachable(t *testing.T) {
	ctx := testContext(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	silent := startProxy(t, closed)
	silent.cutSilently() // accepts, and never answers

	s := lease.Settings{LeaseName: "x", OwnerName: "a", OperationTimeout: 300 * time.Millisecond}
	for _, addr := range []string{closed, silent.addr()} {
		start := time.Now()
		l, err := New(ctx, s, Config{ConnString: "postgres://troupe@" + addr + "/postgres?sslmode=disable&connect_timeout=0",
			SetupTimeout: 300 * time.Millisecond})
		took := time.Since(start)
		if l != nil {
			l.Close()
		}
		if !errors.Is(err, lease.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
			t.Errorf("New(%s) = %v, want lease.ErrUnavailable naming the address", addr, err)
		}
		// A bound, not a measurement: New must not hang.
		if took > 10*time.Second {
			t.Errorf("New(%s) took %v with a setup timeout of 300ms", addr, took)
		}
	}
	silent.refuse()

	// A pool of the application's, on a server that is not there.
	pool, err := pgxpool.New(ctx, "postgres://troupe@"+closed+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if l, err := New(ctx, s, Config{Pool: pool}); !errors.Is(err, lease.ErrUnavailable) {
		if l != nil {
			l.Close()
		}
		t.Errorf("New on a pool of an absent server: %v, want lease.ErrUnavailable", err)
	}
}

// TestDefaultMargin: the default safety margin is a tenth of the timeout, and leaves
// room for a renewal when the interval is close to the timeout.
func TestDefaultMargin(t *testing.T) {
	for _, c := range []struct{ interval, timeout, want time.Duration }{
		{0, 0, 12 * time.Second},
		{time.Second, 10 * time.Second, time.Second},
		{9 * time.Second, 10 * time.Second, 500 * time.Millisecond},
	} {
		_, cfg, _, err := check(lease.Settings{LeaseName: "x", OwnerName: "a", HeartbeatInterval: c.interval, HeartbeatTimeout: c.timeout},
			Config{ConnString: "postgres://x"})
		if err != nil || cfg.SafetyMargin != c.want {
			t.Errorf("interval %v, timeout %v: margin %v, %v; want %v", c.interval, c.timeout, cfg.SafetyMargin, err, c.want)
		}
	}
}

// TestServerRefusesLogin: a server that answers but refuses the login gives its own
// error, not lease.ErrUnavailable.
func TestServerRefusesLogin(t *testing.T) {
	pc, err := pgxpool.ParseConfig(target.ConnString)
	if err != nil {
		t.Fatal(err)
	}
	cs := strings.Replace(target.ConnString, pc.ConnConfig.User, "nosuchrole", 1)
	if cs == target.ConnString {
		t.Skip("cannot change the user in TROUPE_TEST_POSTGRES")
	}
	_, err = New(testContext(t), lease.Settings{LeaseName: "x", OwnerName: "a"}, Config{ConnString: cs})
	if err == nil || errors.Is(err, lease.ErrUnavailable) || errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "nosuchrole") {
		t.Errorf("New as an unknown role: %v", err)
	}
}

func TestMigrationsEmbedded(t *testing.T) {
	ms := Migrations()
	if len(ms) == 0 || ms[0].Version != 1 || SchemaVersion != ms[len(ms)-1].Version {
		t.Fatalf("Migrations() = %d migrations, SchemaVersion %d", len(ms), SchemaVersion)
	}
	if !strings.Contains(ms[0].SQL, "CREATE TABLE troupe_lease") {
		t.Errorf("migration 1 does not create troupe_lease")
	}
	ms[0].SQL = "changed"
	if Migrations()[0].SQL == "changed" {
		t.Errorf("Migrations returns the package's own slice")
	}
	for name, files := range map[string]fstest.MapFS{
		"gap":     {"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
		"badname": {"migrations/first.sql": {}},
		"empty":   {},
	} {
		if _, err := loadMigrations(files); err == nil {
			t.Errorf("%s: loadMigrations accepted %v", name, files)
		}
	}
}

// TestManualMigration: with migration off, New refuses a missing table; Migrate
// creates it, from several nodes at once; then New works.
func TestManualMigration(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{ConnString: target.ConnString, Schema: newSchema(t), ManualMigration: true}
	s := lease.Settings{LeaseName: "x", OwnerName: "a"}
	if l, err := New(ctx, s, cfg); !errors.Is(err, ErrSchemaOutdated) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("New on an empty schema with ManualMigration: %v, want ErrSchemaOutdated", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- Migrate(ctx, cfg) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Migrate: %v", err)
		}
	}
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM `+qualified(cfg.Schema, versionTable)).Scan(&n); err != nil || n != SchemaVersion {
		t.Errorf("%d rows in %s, %v; want %d", n, versionTable, err, SchemaVersion)
	}
	l := open(t, s, cfg)
	if ok, err := l.Acquire(ctx, nil); !ok || err != nil {
		t.Errorf("Acquire = %v, %v", ok, err)
	}
	if err := Migrate(ctx, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Migrate without a database: %v", err)
	}
}

// TestSchemaTooNew: a lease table migrated by a newer version is refused by New, with
// or without migration, and by Migrate, untouched.
func TestSchemaTooNew(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{ConnString: target.ConnString, Schema: newSchema(t)}
	if err := Migrate(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `INSERT INTO `+qualified(cfg.Schema, versionTable)+` (version, description) VALUES ($1, 'from the future')`,
		SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	for _, manual := range []bool{false, true} {
		c := cfg
		c.ManualMigration = manual
		if l, err := New(ctx, lease.Settings{LeaseName: "x", OwnerName: "a"}, c); !errors.Is(err, ErrSchemaTooNew) {
			if l != nil {
				l.Close()
			}
			t.Errorf("New (manual %v) on a newer schema: %v, want ErrSchemaTooNew", manual, err)
		}
	}
	if err := Migrate(ctx, cfg); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema: %v, want ErrSchemaTooNew", err)
	}
}
