package kernels

// CacheWriteJob is the arguments of one CacheWrite: rows (Rows, KVH·hd) of
// Src into Cache (capacity Cap) at positions Pos0..Pos0+Rows-1.
type CacheWriteJob struct {
	Cache, Src      Tensor
	Kind            KVKind
	Pos0, Rows, Cap int
}

// CacheWriter is implemented by a backend that writes many caches in one
// call: a decoding step of a batch appends each sequence's new keys and
// values to that sequence's own caches, two CacheWrite calls a sequence a
// layer, where a GPU backend would rather launch one kernel a layer.
//
// CacheWrites(jobs, KVH, hd) leaves every cache as CacheWrite would,
// called for each job in order (a later job that writes a position an
// earlier one wrote wins; a job reading a cache an earlier job filled
// reads the new values), and panics on the job that CacheWrite would
// panic on.
type CacheWriter interface {
	CacheWrites(jobs []CacheWriteJob, KVH, hd int)
}

// WriteCaches runs jobs through be's CacheWrites when it has one, else
// through CacheWrite one job at a time.
func WriteCaches(be Backend, jobs []CacheWriteJob, KVH, hd int) {
	if w, ok := be.(CacheWriter); ok {
		w.CacheWrites(jobs, KVH, hd)
		return
	}
	for _, j := range jobs {
		be.CacheWrite(j.Cache, j.Src, j.Kind, j.Pos0, j.Rows, KVH, hd, j.Cap)
	}
}
