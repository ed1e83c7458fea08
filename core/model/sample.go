package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"whale/core/policy"
	"whale/kernels"
)

// rowChunk is the largest number of rows one prompt GEMM call gets when
// the backend cannot pack weights (see packed.go; with packed weights
// every product is row-invariant and none of this applies). The
// float32 GEMM picks its kernel by shape, and the kernel for few rows sums
// in a different order from the packed kernel for many (measured: a row's
// NT result is identical for any m < 24 and for any m ≥ 24, but not
// across). Prompt rows always run in blocks of at most rowChunk rows, so a
// prompt token's keys and values are bit-identical whether or not part of
// the prompt came from the prefix cache: reuse never changes a completion.
// Decoding runs whole batches (the packed kernel is 2-3× faster for many
// rows) unless SamplerOptions.Exact is set.
const rowChunk = 16

// maxRows bounds the rows of one prefill forward pass (activation memory).
const maxRows = 2048

// kvPoolBytes is the most the pool of freed KV caches may keep for reuse
// (kvbudget.go sizes it from the run's sequences): what recycling saves is
// their zeroing, small beside decoding into them, and what the pool holds
// stays resident.
const kvPoolBytes = 32 << 20

// DefaultPrefixCacheBytes is the most the prefix cache may hold when
// SamplerOptions.PrefixCacheBytes is 0 (kvbudget.go sizes it from the
// run's batch and sequence lengths below that). What it serves best is a
// rollout's next turn, admitted soon after its last turn ended when the
// caller keeps no more requests in flight than the batch (an engine's
// harness runs do): on the bench workload 64 MiB recomputed 1.4 % more
// prompt rows than 128 MiB, and holds 64 MiB less (docs/PERFORMANCE.md,
// "Issue 41: cheaper episodes").
const DefaultPrefixCacheBytes = 64 << 20

// SamplerOptions configure a Sampler.
type SamplerOptions struct {
	// BF16 runs the matrix products on bfloat16 copies of the weights
	// (half the memory traffic; logits differ from float32 by ~1e-2).
	BF16 bool
	// KVBF16 keeps the KV caches in bfloat16 on a backend that can
	// (kernels.BF16KV; elsewhere it changes nothing): half the memory, and
	// half the bytes decode attention streams. Keys and values are rounded
	// to bfloat16 when stored (relative 2^-9), so log-probabilities move
	// by about 1e-3 and a sampled token can change: it is off by default
	// (docs/PERFORMANCE.md has the measurements).
	KVBF16 bool
	// PrefixCacheBytes bounds the KV kept for prefix reuse (counted at the
	// caches' bytes per element); 0 sizes it from the run's batch and sequence
	// lengths (kvbudget.go; at most DefaultPrefixCacheBytes), negative
	// disables reuse.
	PrefixCacheBytes int64
	// Exact asks that a sequence's log-probabilities be bit-identical
	// whatever else shares its batch. On a backend that packs weights
	// (kernels.PackedNT: the CPU float32 backend) decoding is always exact
	// at full speed and the field changes nothing. Elsewhere it runs
	// decoding GEMMs in blocks of rowChunk rows (2-3× slower for many
	// sequences); without it, log-probabilities can then differ in the last
	// bits once 24 or more sequences decode together.
	Exact bool
	// MaxBatch bounds the sequences decoding at once (and so the KV caches
	// alive); further requests wait for a free slot. 0 means 64.
	MaxBatch int
	// MaxKVBytes bounds the KV caches of running sequences (at their bytes
	// per element, each sized for its prompt plus MaxNewTokens); a request
	// waits while admitting it would exceed the bound, unless nothing runs.
	// 0 means 4 GiB.
	MaxKVBytes int64
}

// Sampler generates completions from a Model with a KV cache per sequence,
// batched decoding and prefix reuse, from token prompts (core/chat's
// Local makes it a chat policy), in one batch (Generate) or continuously
// (OpenStream, stream.go). It is not safe for
// concurrent use: one stream, or one Generate call, at a time. The Model
// must not be trained while a Generate call runs or a stream is open
// (between them is fine: caches follow the weights).
// On a backend that packs weights (the CPU float32 one) it keeps a packed
// copy of every matrix, in float32 or, with BF16, in bfloat16 (so as much
// memory again as the model's matrices, or half), repacked on the first
// Generate after the weights change (under LoRA only the adapters
// change, which are never copied).
type Sampler struct {
	m       *Model
	opts    SamplerOptions
	version uint64 // Model.Version the prefix cache belongs to
	// packed is the Model's baseVersion the packed or bf16 copy belongs
	// to: under LoRA the adapters train and the copy stays good.
	packed  uint64
	bfArena kernels.Tensor
	bw      *weights // bf16 views, or nil
	// pk holds every matrix prepacked (see packed.go), or nil when the
	// backend cannot pack; it replaces bw.
	pk    *packedModel
	cache *prefixCache
	pool  *kvPool
	// prompts holds the filled prompt caches of running sequences by
	// their tokens' key, for sequences admitted later to share.
	prompts map[uint64][]*promptKV
	sc      *inferScratch
	ss      sampleScratch
	// decodeHost receives each decoding step's logits.
	decodeHost []float32
	stats      SamplerStats
	// livePeak and seqPeak are the most cache bytes live at once and the
	// largest sequence's (kvbudget.go).
	livePeak, seqPeak int64
	packTried         bool
	// warm says decoding holds a kernels.Warm section (warmParams).
	warm bool
	// roots says the backend reads a span's root (kernels.RootSpans):
	// prompt caches then record which cache their first positions were
	// copied from (promptKV.root).
	roots bool
	// open is set while a stream (Generate opens one) uses the scratch
	// buffers and the prefix cache above.
	open bool
	// of is the sampler whose copies of the weights a lane reads
	// (OpenLanes), nil for a sampler that keeps its own; lanes are the
	// lanes this one keeps.
	of    *Sampler
	lanes []*Sampler
}

// SamplerStats counts a Sampler's work since it was made.
type SamplerStats struct {
	PromptTokens  int64 // prompt tokens of all requests
	PrefillTokens int64 // prompt tokens computed by a forward pass
	ReusedTokens  int64 // prompt tokens whose K and V were copied instead
	// SharedTokens are prompt positions a sequence read from another's
	// cache (an identical prompt in the same prefill) instead of a copy.
	SharedTokens   int64
	DecodeTokens   int64 // tokens fed during decoding
	SampledTokens  int64 // tokens returned
	CachedPrefixes int   // entries now in the prefix cache
	// PrefixBytes and PoolBytes are the KV bytes the prefix cache and the
	// pool of freed caches hold now; PrefixBudget and PoolBudget their
	// bounds (kvbudget.go).
	PrefixBytes, PrefixBudget int64
	PoolBytes, PoolBudget     int64
	// LiveKVPeak is the most cache bytes running sequences held at once,
	// SeqKVPeak the largest one sequence's: what the bounds follow.
	LiveKVPeak, SeqKVPeak int64
}

// Stats returns the sampler's counters.
func (s *Sampler) Stats() SamplerStats {
	st := s.stats
	st.CachedPrefixes = len(s.cache.entries)
	st.PrefixBytes, st.PrefixBudget = s.cache.used, s.cache.budget
	st.PoolBytes, st.PoolBudget = s.pool.bytes, s.pool.budget
	st.LiveKVPeak, st.SeqKVPeak = s.livePeak, s.seqPeak
	return st
}

// warmParams is the model size from which a stream's decoding steps keep
// the kernel helpers spinning (kernels.Warm) between forward passes. From
// about this size (64 MiB of bfloat16 weights a token) a pass's products
// outlast the token drawing between passes many times over, so a helper
// that parks there costs its share of the next pass's first products;
// below it (the embedded model: 4.5M parameters, passes of tens of
// microseconds between harness code) parking saves more CPU than it
// costs (docs/PERFORMANCE.md, "Warm helpers for batch-1 decoding").
const warmParams = 32 << 20

// paramCount is how many parameters a layout holds.
func paramCount(params []ParamInfo) int {
	n := 0
	for _, p := range params {
		n += p.Len
	}
	return n
}

// NewSampler returns a sampler over m.
func NewSampler(m *Model, opts SamplerOptions) *Sampler {
	budget := opts.PrefixCacheBytes
	if budget == 0 {
		budget = prefixBudget(0)
	}
	s := &Sampler{m: m, opts: opts, warm: paramCount(m.params) >= warmParams}
	bk, ok := m.be.(kernels.BF16KV)
	s.pool = newKVPool(m.be, poolBudget(0), opts.KVBF16 && ok && bk.BF16KVCaches())
	s.roots = kernels.RootSpans(m.be) && !s.pool.bf16
	s.cache = newPrefixCache(func(e entryKV) {
		s.pool.put(e.own)
		s.releasePrompt(e.pre)
	}, max(budget, 0), s.pool.elem)
	s.version = m.Version() - 1 // force a refresh on first use
	s.packed = m.baseVersion - 1
	return s
}

// OpenLanes opens n streams (at most the sampler's MaxBatch, at least
// one) that may run at the same time, one goroutine each: this sampler's
// and n−1 lanes' (samplers over the same model that read this one's
// copies of the weights, packed or bfloat16, with caches, scratch and
// counters of their own, kept for the next call). Each decodes at most its
// share of MaxBatch, so together they hold the KV caches one stream
// would. While they are open the kernels' threads are shared out among
// them (kernels.Lanes): each lane's products run on its own share, and a
// stream that closes gives its share to the others. A completion
// depends on its request alone, so nothing sampled depends on which lane
// serves a request. Stats are this sampler's alone.
func (s *Sampler) OpenLanes(n int) ([]*Stream, error) {
	width := s.width()
	n = max(1, min(n, width))
	if n == 1 {
		st, err := s.OpenStream()
		if err != nil {
			return nil, err
		}
		return []*Stream{st}, nil
	}
	for len(s.lanes) < n-1 {
		l := NewSampler(s.m, s.opts)
		l.of = s
		s.lanes = append(s.lanes, l)
	}
	// Each stream gives its share of the threads back as it closes, to
	// the lanes still decoding (kernels.Lanes).
	leave := kernels.Lanes(n)
	out := make([]*Stream, 0, n)
	// This sampler first: a lane takes its copies of the weights as its
	// stream opens, from one goroutine, before any runs.
	for i, l := range s.withLanes()[:n] {
		st, err := l.openStream((width + n - 1) / n)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			for range n - len(out) {
				leave()
			}
			return nil, fmt.Errorf("model: lane %d of %d: %w", i+1, n, err)
		}
		st.onClose = leave
		out = append(out, st)
	}
	return out, nil
}

// width is the most sequences the sampler's stream decodes at once
// (SamplerOptions.MaxBatch, 0 meaning 64).
func (s *Sampler) width() int {
	if s.opts.MaxBatch > 0 {
		return s.opts.MaxBatch
	}
	return 64
}

// withLanes is the sampler followed by the lanes it keeps.
func (s *Sampler) withLanes() []*Sampler { return append([]*Sampler{s}, s.lanes...) }

// seqState is one sequence being generated.
type seqState struct {
	id  int // the caller's id (Stream.Submit; the index in Generate)
	req *Request
	// The cache is in two parts, split at pn, a whole number of granules
	// of the backend's prefix split (kernels.PrefixGranule): prompt holds
	// positions 0..pn-1, shared with every sequence whose prompt begins
	// with the same tokens (the k samples of a task, and their next turns,
	// read them from memory once per step, not k times), and kv, of
	// capacity cap-pn, the positions from pn on. AttentionKV's results do
	// not depend on the split, so nothing sampled does.
	prompt *promptKV
	pn     int
	kv     kernels.Tensor // [layer][K|V][KVH][cap-pn][hd]
	cap    int            // positions the sequence may reach
	n      int            // tokens whose K and V are in the cache
	// canon counts the leading cache rows computed by the row-invariant
	// (blocked) GEMM path, like every prompt row: only those may be reused
	// by a later prompt without changing its completion (see rowChunk).
	canon  int
	toks   []int32   // prompt then completion
	logits []float32 // next-token logits after toks[:n]
	rng    *rand.Rand
	out    Completion
	done   bool
	// entropy sums the entropies of the distributions out.Tokens were
	// drawn from (Completion.Entropy is their mean).
	entropy float64
}

// ReleaseCaches frees the KV caches the sampler and its lanes (OpenLanes)
// keep between streams: the prefix cache's entries and the pool of freed
// caches. A caller about to
// train the model calls it (the entries would be stale after the step
// anyway) so that their memory and the training activations' are not held
// at once. It is an error while a stream is open.
func (s *Sampler) ReleaseCaches() error {
	for _, l := range s.withLanes() {
		if l.open {
			return errors.New("model: release caches: a stream is open")
		}
	}
	for _, l := range s.withLanes() {
		l.cache.clear()
		l.pool.drain()
	}
	return nil
}

// refresh drops caches made from older weights and rebuilds the bf16 copy
// (a lane takes its sampler's).
func (s *Sampler) refresh() {
	if s.version == s.m.Version() {
		return
	}
	s.cache.clear()
	s.version = s.m.Version()
	if s.of != nil {
		s.of.refresh()
		s.pk, s.bw = s.of.pk, s.of.bw
		return
	}
	if s.packed == s.m.baseVersion {
		return
	}
	s.packed = s.m.baseVersion
	switch {
	case s.m.frozen != nil:
		// The frozen bfloat16 weights are read where they are (a packed
		// copy made before FreezeBF16 goes with the sampler).
		s.pk, s.bw = nil, &s.m.frozen.wb
	case s.pk != nil:
		s.pk.repack(s.m)
	case !s.packTried:
		s.packTried = true
		if pk, ok := s.m.packWeights(s.opts.BF16); ok {
			s.pk = pk
			// Large packed weights live outside the Go heap (huge pages):
			// return them when the sampler goes.
			runtime.AddCleanup(s, func(be kernels.PackedNT) { be.FreePacked(pk.arena) }, s.m.be.(kernels.PackedNT))
		}
	}
	if s.pk == nil && s.opts.BF16 && s.m.frozen == nil {
		if s.bfArena.IsZero() {
			s.bfArena = s.m.be.AllocBF16(s.m.arena.Len())
		}
		s.m.be.ToBF16(s.bfArena, s.m.arena)
		w := bind(s.m.Config, s.m.params, s.bfArena)
		s.bw = &w
	}
}

// checkRequest refuses a request the sampler cannot serve, naming the
// caller's id for it (the index in Generate) and its key.
func (s *Sampler) checkRequest(id int, r *Request) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("model: request %d (key %q): %s", id, r.Key, fmt.Sprintf(format, args...))
	}
	switch {
	case len(r.Prompt) == 0:
		return bad("empty prompt")
	case r.MaxNewTokens <= 0:
		return bad("MaxNewTokens %d must be positive", r.MaxNewTokens)
	case !(r.Temperature >= 0) || math.IsInf(float64(r.Temperature), 0):
		return bad("Temperature %v must be finite and ≥ 0", r.Temperature)
	case r.TopK < 0:
		return bad("TopK %d is negative", r.TopK)
	case !(r.TopP >= 0 && r.TopP <= 1):
		return bad("TopP %v outside [0, 1]", r.TopP)
	}
	for j, t := range r.Prompt {
		if t < 0 || int(t) >= s.m.d.V {
			return bad("prompt token %d: id %d outside vocabulary of %d", j, t, s.m.d.V)
		}
	}
	return nil
}

// Generate samples a batch over a stream (stream.go): every
// request is submitted at once, in order, and the completions are put back
// in request order; the sampler admits them into free slots as earlier
// ones finish.
func (s *Sampler) Generate(ctx context.Context, reqs []Request) ([]Completion, error) {
	// Refuse a bad batch before any work is done.
	for i := range reqs {
		if err := s.checkRequest(i, &reqs[i]); err != nil {
			return nil, err
		}
	}
	st, err := s.OpenStream()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for i := range reqs {
		st.submit(i, &reqs[i])
	}
	return policy.Collect(ctx, len(reqs), func(ctx context.Context) (int, Completion, error) {
		res, err := st.Next(ctx)
		return res.ID, res.Completion, err
	})
}
