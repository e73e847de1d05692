package badgerjournal

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/stderrlog"
	"go.uber.org/zap"
)

// Durability says when a write counts as done.
type Durability int

const (
	// SyncEachBatch, the default, syncs every group-commit batch to disk
	// before any of its writers is answered: an acknowledged event
	// survives a crash of the process and of the machine.
	SyncEachBatch Durability = iota

	// NoSync answers writers once a batch is in badger's memory-mapped
	// log, without waiting for the disk. An acknowledged event survives a
	// crash of the process (the operating system still holds the pages)
	// but may be lost when the machine crashes or loses power.
	NoSync
)

// String returns the constant's name.
func (d Durability) String() string {
	switch d {
	case SyncEachBatch:
		return "SyncEachBatch"
	case NoSync:
		return "NoSync"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// Defaults of the zero values of Config.
const (
	// DefaultMemTableSize is badger's memtable size. Badger keeps up to
	// five memtables, and one transaction holds at most 15% of one, which
	// bounds a group-commit batch (larger batches are split) and an atomic
	// write (larger ones are rejected with persistence.ErrTooLarge).
	DefaultMemTableSize = 64 << 20

	// DefaultValueLogGCInterval is how often the store runs badger's
	// value-log garbage collection.
	DefaultValueLogGCInterval = 10 * time.Minute

	// DefaultValueLogGCDiscardRatio is the share of a value-log file that
	// must be garbage for the collection to rewrite it.
	DefaultValueLogGCDiscardRatio = 0.5

	// DefaultHighestCacheSize is how many persistence ids the writer
	// remembers the highest sequence number of, to check new writes
	// without reading the database.
	DefaultHighestCacheSize = 1 << 16
)

// Config configures a Store. The zero value of every field but Dir means
// its default.
type Config struct {
	// Dir is the directory of the badger database. It is created if
	// missing. Required.
	Dir string

	// Durability says when a write is acknowledged. Default:
	// SyncEachBatch.
	Durability Durability

	// Logger receives the store's log lines and badger's (badger's
	// informational messages at debug level). Default: the logger of the actor
	// system the store is attached to by persistence.Start (UseSystemLogger), and
	// until then warnings and errors to standard error; zap.NewNop() silences the
	// store on purpose.
	Logger *zap.Logger

	// MemTableSize is badger's memtable size in bytes, between 1 MiB and
	// 1 GiB. Default: DefaultMemTableSize.
	MemTableSize int64

	// HighestCacheSize bounds the writer's cache of highest sequence
	// numbers, in persistence ids. Default: DefaultHighestCacheSize.
	HighestCacheSize int

	// ValueLogGCInterval is how often badger's value-log garbage
	// collection runs, reclaiming the space of deleted values stored in the
	// value log (values of 1 MiB or more). A negative value turns it off.
	// Close stops it. Default: DefaultValueLogGCInterval.
	ValueLogGCInterval time.Duration

	// ValueLogGCDiscardRatio is the share of a value-log file, above 0 and
	// below 1, that must be garbage for the collection to rewrite it.
	// Default: DefaultValueLogGCDiscardRatio.
	ValueLogGCDiscardRatio float64
}

// Options is the former name of Config.
//
// Deprecated: use Config.
type Options = Config

// Validate reports the first field that holds an unusable value.
func (o Config) Validate() error {
	switch {
	case o.Dir == "":
		return errors.New("badgerjournal: Config.Dir is empty")
	case o.Durability != SyncEachBatch && o.Durability != NoSync:
		return fmt.Errorf("badgerjournal: Config.Durability is %v", o.Durability)
	case o.MemTableSize != 0 && (o.MemTableSize < 1<<20 || o.MemTableSize > 1<<30):
		return fmt.Errorf("badgerjournal: Config.MemTableSize %d is not within 1 MiB..1 GiB", o.MemTableSize)
	case o.ValueLogGCDiscardRatio < 0 || o.ValueLogGCDiscardRatio >= 1:
		return fmt.Errorf("badgerjournal: Config.ValueLogGCDiscardRatio %v is not within 0..1", o.ValueLogGCDiscardRatio)
	case o.HighestCacheSize < 0:
		return fmt.Errorf("badgerjournal: Config.HighestCacheSize %d is negative", o.HighestCacheSize)
	}
	return nil
}

// withDefaults returns o with its zero values replaced by the defaults, and,
// when Logger was nil, the default logger's switch to the system's.
func (o Config) withDefaults() (Config, *stderrlog.Attachable) {
	var attach *stderrlog.Attachable
	if o.Logger == nil {
		o.Logger, attach = stderrlog.NewAttachable()
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.ValueLogGCInterval == 0 {
		o.ValueLogGCInterval = DefaultValueLogGCInterval
	}
	if o.ValueLogGCDiscardRatio == 0 {
		o.ValueLogGCDiscardRatio = DefaultValueLogGCDiscardRatio
	}
	if o.HighestCacheSize == 0 {
		o.HighestCacheSize = DefaultHighestCacheSize
	}
	return o, attach
}
