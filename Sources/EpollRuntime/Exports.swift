// The runtime serves the types of the pure HTTP layer (requests, responses, events): a user of
// `HTTPServer` needs them, so importing the runtime brings them along.
@_exported import HTTPCore
