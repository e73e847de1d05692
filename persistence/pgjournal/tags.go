package pgjournal

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/troupe-go/troupe/persistence"
)

// tagSQL reads one page of a tag's events in offset order, along the tag
// index's primary key, joined to the events (deleted events have neither).
const tagSQL = `SELECT t.tag_offset, t.persistence_id, ` + eventColumns + `
FROM troupe_event_tag t
JOIN troupe_event e ON e.persistence_id = t.persistence_id AND e.sequence_nr = t.sequence_nr
WHERE t.tag = $1 AND t.tag_offset >= $2
ORDER BY t.tag_offset
LIMIT $3`

// EventsByTag implements persistence.TagQuerier. It reads in pages of
// Config.ReplayPageSize, one query each. Offsets are handed out in commit
// order (see the package documentation), so what any query sees of a tag is
// a prefix of its final order, and resuming from the last offset seen plus
// one misses nothing, even with several stores writing to the database.
func (s *Store) EventsByTag(ctx context.Context, tag string, fromOffset, max uint64, fn func(persistence.TaggedRecord) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.leave()
	if len(tag) > MaxTagLen || !fitsInt64(fromOffset) {
		return nil
	}
	page := uint64(s.cfg.ReplayPageSize)
	from := int64(fromOffset)
	var dec eventDecoder
	var row rawRow
	var delivered uint64
	var pid string
	var start uint32
	done := ctx.Done()
	for {
		limit := page
		if max != 0 && max-delivered < limit {
			limit = max - delivered
		}
		rows, err := s.pool.Query(ctx, tagSQL, []byte(tag), from, int64(limit))
		if err != nil {
			return s.callError(fmt.Sprintf("events by tag %q", tag), err)
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
			var offset int64
			var rowPID []byte
			if err := dec.read(rows, &row, &offset, &rowPID); err != nil {
				rows.Close()
				return s.callError(fmt.Sprintf("events by tag %q", tag), err)
			}
			if dec.binary {
				vals := rows.RawValues()
				if len(vals[0]) != 8 {
					rows.Close()
					return fmt.Errorf("pgjournal: events by tag %q: offset of %d bytes", tag, len(vals[0]))
				}
				offset, rowPID = int64(binary.BigEndian.Uint64(vals[0])), vals[1]
			}
			if string(rowPID) != pid {
				pid = string(rowPID)
				start = dec.sums.pid(pid)
			}
			rec, err := dec.record(pid, start, &row)
			if err == nil {
				err = fn(persistence.TaggedRecord{Offset: uint64(offset), Record: rec})
			}
			if err != nil {
				rows.Close()
				return err
			}
			n++
			from = offset + 1
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.callError(fmt.Sprintf("events by tag %q", tag), err)
		}
		delivered += n
		if n < limit || (max != 0 && delivered == max) {
			return ctx.Err()
		}
	}
}
