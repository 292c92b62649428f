package provisioning

// FreshScript exposes freshScript to the external tests.
var FreshScript = freshScript
