-- pgjournal schema version 2: writes no longer touch troupe_persistence_id.
--
-- A write is checked by reading: it is rejected when its persistence id
-- has an event at or above its first sequence number, or a higher
-- sequence number kept in troupe_persistence_id; the primary key of
-- troupe_event catches two writes that race. troupe_persistence_id now
-- holds a row only for the persistence ids whose events were deleted:
-- the first delete creates it, with the highest sequence number at that
-- time, which a later write must stay above once the events are gone,
-- and how far events were deleted. Rows written by version 1 keep their
-- meaning, so no data changes.
--
-- The version number changes because a plug-in of version 1 reads the
-- highest sequence number from troupe_persistence_id alone, which
-- version 2 no longer keeps up to date: such a plug-in refuses this
-- database instead of reading it wrongly.
--
-- The rows are rarely updated now: pack the pages full.
ALTER TABLE troupe_persistence_id SET (fillfactor = 100);

-- Raised by the statement that checks a group commit after its inserts,
-- when a write turns out to be one that the lookups before the insert
-- would have rejected (see writer.go). The error aborts the transaction;
-- the store runs the batch again, and the lookups reject that write alone.
CREATE FUNCTION troupe_reject_write(persistence_id bytea, first_seq bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'pgjournal: the write of % from sequence number % meets events written or deleted by another writer',
        encode(persistence_id, 'escape'), first_seq
        USING ERRCODE = 'TR001';
END
$$;
