package provisioning

// FreshScript exposes freshScript to the external tests.
var FreshScript = freshScript

// LockID exposes the per-schema advisory lock key to the external tests.
var LockID = lockID
