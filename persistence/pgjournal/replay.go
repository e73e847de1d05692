package pgjournal

import (
	"context"
	"fmt"

	"github.com/troupe-go/troupe/persistence"
)

// replaySQL reads one page of a persistence id's events, in sequence order,
// along the primary key.
const replaySQL = `SELECT ` + eventColumns + `
FROM troupe_event e
WHERE e.persistence_id = $1 AND e.sequence_nr >= $2 AND e.sequence_nr <= $3
ORDER BY e.sequence_nr
LIMIT $4`

// ReplayMessages implements persistence.Journal. It reads the events in
// pages of Config.ReplayPageSize, one query each, and calls fn for each row
// as it arrives: a replay never holds more than a page in memory (pgx reads
// rows as fn consumes them). fn runs while the page's query holds a pooled
// connection, so it should be quick. Each page is read from its own
// consistent view; events written while the replay runs may or may not be
// included.
func (s *Store) ReplayMessages(ctx context.Context, persistenceID string, fromSeq, toSeq, max uint64, fn func(persistence.Record) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.leave()
	if fromSeq == 0 {
		fromSeq = 1
	}
	if fromSeq > toSeq || !fitsInt64(fromSeq) || len(persistenceID) > MaxPersistenceIDLen {
		return nil
	}
	pid := []byte(persistenceID)
	var dec eventDecoder
	start := dec.sums.pid(persistenceID)
	from, to := int64(fromSeq), clampInt64(toSeq)
	page := uint64(s.cfg.ReplayPageSize)
	var row rawRow
	var delivered uint64
	done := ctx.Done()
	for {
		limit := page
		if max != 0 && max-delivered < limit {
			limit = max - delivered
		}
		rows, err := s.pool.Query(ctx, replaySQL, pid, from, to, int64(limit))
		if err != nil {
			return s.callError(fmt.Sprintf("replay %q from %d", persistenceID, from), err)
		}
		dec.prepare(rows)
		var n uint64
		for rows.Next() {
			select {
			case <-done:
				rows.Close()
				return ctx.Err()
			default:
			}
			if err := dec.read(rows, &row); err != nil {
				rows.Close()
				return s.callError(fmt.Sprintf("replay %q", persistenceID), err)
			}
			rec, err := dec.record(persistenceID, start, &row)
			if err == nil {
				err = fn(rec)
			}
			if err != nil {
				rows.Close()
				return err
			}
			n++
			from = row.seq + 1
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.callError(fmt.Sprintf("replay %q", persistenceID), err)
		}
		delivered += n
		if n < limit || (max != 0 && delivered == max) || from > to {
			return ctx.Err()
		}
	}
}
