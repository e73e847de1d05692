-- pgjournal schema version 1: events, the highest sequence number of each
-- persistence id, the tag index, and snapshots.
--
-- Persistence ids, tags, manifests and writer ids are bytea: a Go string may
-- hold any bytes, and text would refuse NUL and invalid UTF-8. Read them in
-- psql with convert_from(column, 'UTF8'). Timestamps are Unix nanoseconds.
-- The tables are created in the first schema of the search_path.

-- One row per persistence id ever written. highest_sequence_nr is the
-- highest sequence number written, kept when events are deleted, so a
-- sequence number is never reused. Every write updates it in the same
-- transaction, and only when its first sequence number is above it: this
-- row is where two writers of one persistence id meet, and the second one
-- is rejected. deleted_to is how far events were deleted. The rows are
-- updated all the time: free room in each page (fillfactor) lets
-- PostgreSQL update them in place (HOT), without new index entries.
CREATE TABLE troupe_persistence_id (
    persistence_id      bytea  NOT NULL PRIMARY KEY,
    highest_sequence_nr bigint NOT NULL,
    deleted_to          bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 50);

-- One row per stored event. The primary key is the unique
-- (persistence id, sequence number) constraint, and the index a replay
-- reads in order. tags is NULL for an untagged event, else the tags as
-- uvarint-length-prefixed byte strings. checksum is a CRC-32C over every
-- other column (see records.go).
CREATE TABLE troupe_event (
    persistence_id bytea   NOT NULL,
    sequence_nr    bigint  NOT NULL,
    written_at     bigint  NOT NULL,
    manifest       bytea   NOT NULL,
    writer_id      bytea   NOT NULL,
    tags           bytea,
    checksum       integer NOT NULL,
    payload        bytea   NOT NULL,
    PRIMARY KEY (persistence_id, sequence_nr)
);

-- The tag index: one row per tag of each tagged event. tag_offset grows in
-- commit order (see troupe_tag_counter); EventsByTag reads the primary key
-- in order. The second index serves deletes.
CREATE TABLE troupe_event_tag (
    tag            bytea  NOT NULL,
    tag_offset     bigint NOT NULL,
    persistence_id bytea  NOT NULL,
    sequence_nr    bigint NOT NULL,
    PRIMARY KEY (tag, tag_offset)
);
CREATE INDEX troupe_event_tag_event ON troupe_event_tag (persistence_id, sequence_nr);

-- The last tag offset handed out. A transaction that writes tagged events
-- reserves its offsets here first and holds the row lock until it commits,
-- so offsets are handed out in commit order.
CREATE TABLE troupe_tag_counter (
    id          boolean NOT NULL PRIMARY KEY DEFAULT true CHECK (id),
    last_offset bigint  NOT NULL
);
INSERT INTO troupe_tag_counter (id, last_offset) VALUES (true, 0);

-- One row per snapshot; a new snapshot with the same persistence id and
-- sequence number replaces the old one. checksum covers the other columns.
CREATE TABLE troupe_snapshot (
    persistence_id bytea   NOT NULL,
    sequence_nr    bigint  NOT NULL,
    written_at     bigint  NOT NULL,
    manifest       bytea   NOT NULL,
    checksum       integer NOT NULL,
    payload        bytea   NOT NULL,
    PRIMARY KEY (persistence_id, sequence_nr)
);
