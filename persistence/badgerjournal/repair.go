package badgerjournal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.uber.org/zap"
)

// repairEmptyLogs removes the zero-length memtable (.mem) and value-log (.vlog)
// files in dir. A crash between badger creating such a file and writing its header
// leaves it empty, and badger then refuses to open the database (badger issue 2207:
// it takes the empty file for one it has just created, and fails). An empty file
// holds no entry, so no acknowledged event is lost by removing it: with
// SyncEachBatch an event is acknowledged only once its log is synced, which an empty
// file never was. Each removal is logged at warn level.
//
// An empty table (.sst) or MANIFEST cannot be repaired: the manifest lists the tables
// that hold stored events. It fails with ErrDamaged before badger is opened (badger
// leaves goroutines behind when its Open fails).
func repairEmptyLogs(dir string, logger *zap.Logger) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // badger will report it
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		log := strings.HasSuffix(name, ".mem") || strings.HasSuffix(name, ".vlog")
		table := strings.HasSuffix(name, ".sst") || name == "MANIFEST"
		if !log && !table {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		path := filepath.Join(dir, name)
		if table {
			return explainOpenError(dir, fmt.Errorf("%s is empty", name))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s is empty (left by a crash) and cannot be removed: %v; remove it by hand and open again",
				ErrDamaged, path, err)
		}
		logger.Warn("badgerjournal: removed an empty log file left by a crash; it held no data",
			zap.String("file", path))
	}
	return nil
}

// damagedFile finds the file a badger error names.
var damagedFile = regexp.MustCompile(`\d+\.(?:mem|vlog|sst)\b|MANIFEST|KEYREGISTRY`)

// explainOpenError turns badger's refusal to open dir into an error that names the
// damaged file and the fix, wrapping ErrDamaged, when the error names a file of the
// database and is not a matter of permissions; otherwise it returns nil.
func explainOpenError(dir string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return nil
	}
	msg := err.Error()
	file := damagedFile.FindString(msg)
	if file == "" && strings.Contains(strings.ToLower(msg), "manifest") {
		file = "MANIFEST"
	}
	if file == "" {
		return nil
	}
	path := filepath.Join(dir, file)
	var fix string
	switch {
	case strings.HasSuffix(file, ".mem"), strings.HasSuffix(file, ".vlog"):
		fix = "it is a log that may hold acknowledged events not yet in tables, so it was not repaired. " +
			"Copy the directory first; then, if losing the events in that file is acceptable, move it out of " +
			"the directory and open again, or else restore the directory from a backup"
	default:
		fix = "it holds stored events or the index of them, so it was not repaired. Restore the directory " +
			"from a backup; badger's own tool (badger info --dir " + dir + ") shows what is still readable"
	}
	return fmt.Errorf("%w: %s: %s (badger: %v)", ErrDamaged, path, fix, err)
}
