package pgjournal

// setup is the configuration of a test's store: a Config, and the bounds of the
// group commit's statements that no user sets (zero: the defaults).
type setup struct {
	Config
	tuning
}
