// Package journaltest is the conformance suite for persistence plug-ins.
//
// Every persistence.Journal must pass RunJournalSuite and every
// persistence.SnapshotStore must pass RunSnapshotSuite, from a test of its
// own package:
//
//	func TestJournalConformance(t *testing.T) {
//		journaltest.RunJournalSuite(t, func(t *testing.T, dir string) persistence.Journal {
//			j, err := myjournal.Open(dir)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return j
//		}, journaltest.Options{Durable: true, CorruptEvent: corruptEvent})
//	}
//
// The suites check ordering, atomic writes (all or nothing, a rejected write
// not failing the others), replay bounds and limits, the highest sequence
// number surviving deletes, deletes beyond the highest failing, persistence
// ids that are prefixes of each other, concurrent writers, large payloads,
// survival of close and reopen for durable plug-ins, detection of corrupt
// records, and behaviour after Close and with cancelled contexts. They check
// what two writers of one persistence id see: a sequence-number conflict
// reported as persistence.ErrSequenceConflict for the write and the later
// writes of its persistence id in the call (and other rejections never
// reported so), one winner per sequence number when two goroutines race, and,
// through the persistence runtime, two incarnations of one entity in two
// actor systems on the journal, the second of which stops at its first
// conflicting write and writes nothing more. Journals
// that implement the optional persistence.TagQuerier are also checked for
// events by tag (write order across persistence ids, resuming from an
// offset, deleted events skipped, survival of a reopen, concurrent
// writers); for the others those tests are skipped.
//
// Detecting corruption needs the plug-in's help: Options.CorruptEvent and
// Options.CorruptSnapshot damage one stored record the way a failing disk
// would, through whatever access the plug-in's storage allows.
package journaltest
