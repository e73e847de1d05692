package secret

// Value is what the examples must not reach.
const Value = 1
