package pgmigrate_test

import (
	"fmt"
	"testing/fstest"

	"github.com/troupe-go/troupe/internal/pgmigrate"
)

// A plug-in loads its embedded migrations into a Set, whose Migrate it runs on
// its pool when it opens.
func ExampleLoad() {
	files := fstest.MapFS{
		"migrations/0001_initial.sql": {Data: []byte("CREATE TABLE things (id bigint PRIMARY KEY)")},
		"migrations/0002_names.sql":   {Data: []byte("ALTER TABLE things ADD COLUMN name text")},
	}
	ms, err := pgmigrate.Load(files, "migrations/*.sql", "things")
	if err != nil {
		fmt.Println(err)
		return
	}
	set := &pgmigrate.Set{Owner: "things", Table: "things_schema_version", LockKey: 0x5448, Migrations: ms}
	fmt.Println(set.Latest(), ms[1].Name)
	// Output: 2 names
}
