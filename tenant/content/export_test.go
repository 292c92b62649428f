package content

// ReadKey is readKey, for the round-trip test.
var ReadKey = readKey
