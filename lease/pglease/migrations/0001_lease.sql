-- pglease schema version 1: one row per lease.
--
-- name is the lease's name (lease.Settings.LeaseName). owner is the owner
-- holding it (lease.Settings.OwnerName), NULL once released. expires_at is
-- when the lease ends unless renewed, always computed by the server's clock
-- (now() + the heartbeat timeout), never sent by a client. fence, the fencing
-- number, grows by one each time the lease is acquired while free or expired,
-- so on every change of owner; it never decreases, and the row is kept after
-- a release so that it does not start again. acquired_at is when the current
-- tenure began (the last change of fence), renewed_at when it was last
-- renewed, both for people reading the table.
--
-- Renewals update the row every heartbeat: free room in each page
-- (fillfactor) lets PostgreSQL update it in place (HOT). The table is created
-- in the first schema of the search_path.
CREATE TABLE troupe_lease (
    name        text        NOT NULL PRIMARY KEY,
    owner       text,
    fence       bigint      NOT NULL CHECK (fence > 0),
    expires_at  timestamptz NOT NULL,
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL
) WITH (fillfactor = 50);
