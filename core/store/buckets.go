// Package store is whale's workspace file: one bbolt database holding runs,
// their events, candidates and samples, the harness archive, checkpoints and
// content-addressed blobs. It knows bytes and keys, never a model or a
// harness: callers hand it encoded records.
//
// It must never hold a write transaction across model work: every method
// opens, writes and commits one short transaction.
package store

// Bucket and key names. Nested buckets are shown as a/b.
var (
	bucketMeta        = []byte("meta")        // schema version
	bucketRuns        = []byte("runs")        // runs/<id>/{config,status,cursor,created,compute,labels} and sub-buckets
	bucketEvents      = []byte("events")      // runs/<id>/events: seq (big-endian uint64) → JSON
	bucketCandidates  = []byte("candidates")  // runs/<id>/candidates: harness hash → JSON
	bucketSamples     = []byte("samples")     // runs/<id>/samples: seq → JSON
	bucketControl     = []byte("control")     // runs/<id>/control: seq → JSON (journaled commands)
	bucketHarnesses   = []byte("harnesses")   // sha256 hex → JSON {source, parent, proposer}
	bucketCheckpoints = []byte("checkpoints") // id → manifest JSON
	bucketBlobs       = []byte("blobs")       // sha256 hex → bytes, or a file reference

	keySchema = []byte("schema")
	keyConfig = []byte("config")
	keyStatus = []byte("status")
	keyCursor = []byte("cursor")
	// keyPins lists the blobs a run's resume point uses (JSON array), so
	// another run sharing a blob never deletes it.
	keyPins    = []byte("pins")
	keyCreated = []byte("created")
	// keyCompute is the run's compute time so far: nanoseconds, decimal.
	keyCompute = []byte("compute")
	// keyLabels holds a caller's labels of a run: a JSON object of
	// strings (the bench names the version of the code that made it).
	keyLabels = []byte("labels")
)
