// Package memjournal is an in-memory persistence.Journal and
// persistence.SnapshotStore, for tests.
//
// A Store keeps everything in maps guarded by one lock, so each
// WriteMessages call is applied atomically. It keeps a CRC-32C of every
// record, so CorruptEvent and CorruptSnapshot can simulate damaged storage;
// InjectWriteFailure simulates a failing journal. Data does not survive
// Close.
package memjournal
