package model

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

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

// kvPoolBytes bounds the freed KV caches a Sampler keeps for reuse: a few
// sequences' worth, enough for the one that finishes to hand its caches
// to the one admitted next (what recycling saves is their zeroing, small
// beside decoding into them; what the pool holds stays resident).
const kvPoolBytes = 32 << 20

// DefaultPrefixCacheBytes is the prefix cache's bound when
// SamplerOptions.PrefixCacheBytes is 0.
const DefaultPrefixCacheBytes = 128 << 20

// SamplerOptions configure a Sampler.
type SamplerOptions struct {
	// BF16 runs the matrix products on bfloat16 copies of the weights
	// (half the memory traffic; logits differ from float32 by ~1e-2).
	BF16 bool
	// PrefixCacheBytes bounds the KV kept for prefix reuse (counted at 4
	// bytes per element); 0 means DefaultPrefixCacheBytes, negative
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
	// MaxKVBytes bounds the KV caches of running sequences (4 bytes per
	// element, each sized for its prompt plus MaxNewTokens); a request
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
	packTried  bool
	// open is set while a stream (Generate opens one) uses the scratch
	// buffers and the prefix cache above.
	open bool
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
}

// Stats returns the sampler's counters.
func (s *Sampler) Stats() SamplerStats {
	st := s.stats
	st.CachedPrefixes = len(s.cache.entries)
	return st
}

// NewSampler returns a sampler over m.
func NewSampler(m *Model, opts SamplerOptions) *Sampler {
	budget := opts.PrefixCacheBytes
	if budget == 0 {
		budget = DefaultPrefixCacheBytes
	}
	s := &Sampler{m: m, opts: opts}
	s.pool = newKVPool(m.be, kvPoolBytes)
	s.cache = newPrefixCache(func(e entryKV) {
		s.pool.put(e.own)
		s.releasePrompt(e.pre)
	}, max(budget, 0))
	s.version = m.Version() - 1 // force a refresh on first use
	s.packed = m.baseVersion - 1
	return s
}

// seqState is one sequence being generated.
type seqState struct {
	id  int // the caller's id (Stream.Submit; the index in Generate)
	req *Request
	// The cache is in two parts, split at pn, the prompt's whole
	// kernels.KVBlocks: prompt holds positions 0..pn-1, shared with every
	// sequence of the same prefill whose prompt is identical (the k samples
	// of a task read it from memory once per step, not k times), and kv,
	// of capacity cap-pn, the positions from pn on. AttentionKV's results do
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

// kvLayer returns the cache of layer l, keys or values, inside a sequence
// cache of capacity cap (layout: see kernels.KVSpan).
func (m *Model) kvLayer(kv kernels.Tensor, cap, l int, kind kernels.KVKind) kernels.Tensor {
	return kv.View((2*l+int(kind))*cap*m.d.Hk, cap*m.d.Hk)
}

func (m *Model) kvLen(cap int) int { return 2 * m.d.L * cap * m.d.Hk }

// copyKVAt copies positions srcPos..srcPos+n-1 of every layer from src
// (capacity srcCap) to positions dstPos.. of dst (capacity dstCap).
func (m *Model) copyKVAt(dst kernels.Tensor, dstCap, dstPos int, src kernels.Tensor, srcCap, srcPos, n int) {
	if n <= 0 {
		return
	}
	for l := 0; l < m.d.L; l++ {
		for _, kind := range []kernels.KVKind{kernels.Keys, kernels.Values} {
			m.be.CacheCopy(m.kvLayer(dst, dstCap, l, kind), m.kvLayer(src, srcCap, l, kind), kind, dstPos, srcPos, n, m.d.KVH, m.d.hd, dstCap, srcCap)
		}
	}
}

// promptKV is the cache of a prompt's first positions (seqState.pn),
// shared by every running sequence whose prompt begins with the same
// tokens; the last to finish frees it.
type promptKV struct {
	kv     kernels.Tensor // layout of seqState.kv, capacity len(tokens)
	tokens []int32
	refs   int
	live   bool // filled, and in Sampler.prompts for others to share
}

// prefixLen is where the cache of a sequence with a prompt of P tokens
// splits: after the whole KVBlocks before its last token (whose logits the
// prefill computes in the sequence's own cache).
func prefixLen(P int) int { return max(0, P-1) / kernels.KVBlock * kernels.KVBlock }

func tokensKey(t []int32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, x := range t {
		binary.LittleEndian.PutUint32(b[:], uint32(x))
		h.Write(b[:])
	}
	return h.Sum64()
}

// livePrompt returns the filled prompt cache of a running sequence whose
// first tokens are tokens, or nil.
func (s *Sampler) livePrompt(tokens []int32) *promptKV {
	for _, p := range s.prompts[tokensKey(tokens)] {
		if slices.Equal(p.tokens, tokens) {
			return p
		}
	}
	return nil
}

// publish offers p, now filled, to the sequences admitted later.
func (s *Sampler) publish(p *promptKV) {
	if p.live {
		return
	}
	if s.prompts == nil {
		s.prompts = map[uint64][]*promptKV{}
	}
	k := tokensKey(p.tokens)
	s.prompts[k] = append(s.prompts[k], p)
	p.live = true
}

// kvParts is where a cache's positions are: those before pn in pre
// (capacity pn), position p ≥ pn at p-pn in own (capacity ocap).
type kvParts struct {
	pre, own kernels.Tensor
	pn, ocap int
}

func (q *seqState) parts() kvParts {
	p := kvParts{own: q.kv, pn: q.pn, ocap: q.ownCap()}
	if q.prompt != nil {
		p.pre = q.prompt.kv
	}
	return p
}

// at returns the tensor holding position p, its capacity and p's index in it.
func (k kvParts) at(p int) (kernels.Tensor, int, int) {
	if p < k.pn {
		return k.pre, k.pn, p
	}
	return k.own, k.ocap, p - k.pn
}

// copyParts copies positions from..n-1 from src to dst, in pieces that
// each lie in one tensor of both.
func (m *Model) copyParts(dst, src kvParts, from, n int) {
	for a := from; a < n; {
		b := n
		for _, cut := range []int{dst.pn, src.pn} {
			if cut > a && cut < b {
				b = cut
			}
		}
		dt, dc, di := dst.at(a)
		st, sc, si := src.at(a)
		m.copyKVAt(dt, dc, di, st, sc, si, b-a)
		a = b
	}
}

// ownCap is the capacity of q's own cache (the positions from pn on).
func (q *seqState) ownCap() int { return q.cacheCap() - q.pn }

// cacheCap is the capacity of the sequence's caches: q.cap rounded up to a
// multiple of kernels.KVCapGranule, which a backend reads fastest (the CPU
// backend's last block of a cache is otherwise narrower than the rest).
func (q *seqState) cacheCap() int {
	return (q.cap + kernels.KVCapGranule - 1) / kernels.KVCapGranule * kernels.KVCapGranule
}

// allocOwn gives q its own cache (planPrefill gives it its prompt's).
func (s *Sampler) allocOwn(q *seqState) {
	if c := q.ownCap(); c > 0 {
		q.kv = s.m.kvAlloc(s.pool, c)
	}
}

// freeCaches frees q's own cache and drops its share of the prompt cache.
func (s *Sampler) freeCaches(q *seqState) {
	s.pool.put(q.kv)
	q.kv = kernels.Tensor{}
	s.releasePrompt(q.prompt)
	q.prompt = nil
}

// takeCaches hands q's caches over to the prefix cache (which gives them
// back through releasePrompt and the pool when it drops the entry).
func (s *Sampler) takeCaches(q *seqState) entryKV {
	e := entryKV{pre: q.prompt, own: q.kv, pn: q.pn, ocap: q.ownCap()}
	q.kv, q.prompt = kernels.Tensor{}, nil
	return e
}

// takenBytes is what takeCaches would hand over, as entryKV.bytes counts.
func (s *Sampler) takenBytes(q *seqState) int64 {
	return entryKV{pre: q.prompt, own: q.kv}.bytes()
}

// releasePrompt drops one share of the prompt cache p (nil: none); the
// last share frees it.
func (s *Sampler) releasePrompt(p *promptKV) {
	if p == nil {
		return
	}
	if p.refs--; p.refs > 0 {
		return
	}
	if p.live {
		k := tokensKey(p.tokens)
		s.prompts[k] = slices.DeleteFunc(s.prompts[k], func(x *promptKV) bool { return x == p })
		if len(s.prompts[k]) == 0 {
			delete(s.prompts, k)
		}
	}
	s.pool.put(p.kv)
}

// inferScratch holds one inference forward pass's activations for R rows
// and S logit rows.
type inferScratch struct {
	R, S   int
	x      kernels.Tensor // (R,C) residual stream
	a      layerActs      // per-layer scratch (no saved statistics)
	last   kernels.Tensor // (S,C) gathered last rows
	lastn  kernels.Tensor // (S,C) their final norm
	logits kernels.Tensor // (S,V)
	arena  kernels.Tensor
	lora   *loraState // the adapters the scratch has room for (lu)
}

func (s *Sampler) scratch(R, S int) *inferScratch {
	if s.sc != nil && s.sc.R == R && s.sc.S == S && s.sc.lora == s.m.lora {
		return s.sc
	}
	d := s.m.d
	layout := func(take func(int) kernels.Tensor) *inferScratch {
		sc := &inferScratch{R: R, S: S, x: take(R * d.C), last: take(S * d.C), lastn: take(S * d.C), logits: take(S * d.V)}
		sc.a = layerActs{ln1: take(R * d.C), qkv: take(R * (d.Hq + 2*d.Hk)),
			qr: take(R * d.Hq), kr: take(R * d.Hk), att: take(R * d.Hq), ln2: take(R * d.C),
			gu: take(R * 2 * d.F), h: take(R * d.F)}
		s.m.takeLoRAActs(&sc.a, R, take)
		a := &sc.a
		a.q, a.k, a.v = a.qkv.View(0, R*d.Hq), a.qkv.View(R*d.Hq, R*d.Hk), a.qkv.View(R*(d.Hq+d.Hk), R*d.Hk)
		a.g, a.u = a.gu.View(0, R*d.F), a.gu.View(R*d.F, R*d.F)
		if R != 1 {
			// Several rows interleave q, k and v in a fused product: keep
			// the three products apart.
			a.qkv, a.gu = kernels.Tensor{}, kernels.Tensor{}
		}
		sc.a.qn, sc.a.kn = sc.a.q, sc.a.k
		if s.m.Config.QKNorm() {
			sc.a.qn, sc.a.kn = take(R*d.Hq), take(R*d.Hk)
		}
		return sc
	}
	total := 0
	layout(func(n int) kernels.Tensor { total += n; return kernels.MakeTensor(nil, 0, n) })
	var arena kernels.Tensor
	if s.sc != nil && s.sc.arena.Len() >= total {
		arena = s.sc.arena
	} else {
		if s.sc != nil {
			s.m.be.Free(s.sc.arena)
		}
		s.sc = nil
		arena = s.m.be.Alloc(total)
	}
	off := 0
	sc := layout(func(n int) kernels.Tensor { t := arena.View(off, n); off += n; return t })
	sc.arena, sc.lora = arena, s.m.lora
	s.sc = sc
	return sc
}

// work asks the forward pass to feed toks[from:to] of a sequence into its
// cache at positions from..to-1; the sequence's logits are set after
// toks[:to].
type work struct {
	s        *seqState
	from, to int
}

// forward runs the inference forward pass over every work item at once:
// tokens (R) -> K, V appended to each sequence's cache -> logits of each
// item's last row. prompt says the rows are prompt tokens (see rowChunk).
func (s *Sampler) forward(items []work, prompt bool) {
	m, d, be := s.m, s.m.d, s.m.be
	R := 0
	for _, it := range items {
		R += it.to - it.from
	}
	tokens, pos := make([]int32, 0, R), make([]int32, 0, R)
	for _, it := range items {
		tokens = append(tokens, it.s.toks[it.from:it.to]...)
		for p := it.from; p < it.to; p++ {
			pos = append(pos, int32(p))
		}
	}
	sc := s.scratch(R, len(items))
	// Rows are canonical when every product is row-invariant: packed, or
	// in blocks of ≤ rowChunk.
	canonical := s.pk != nil || prompt || s.opts.Exact || R <= rowChunk
	if s.pk == nil && (prompt || s.opts.Exact) {
		m.rowChunk = rowChunk
		defer func() { m.rowChunk = 0 }()
	}
	m.embed(sc.x, tokens)
	spans := make([]kernels.KVSpan, len(items))
	writes := make([]kernels.CacheWriteJob, 0, 2*len(items))
	for l := 0; l < d.L; l++ {
		w := &m.w.layers[l]
		var bw *layerWeights
		if s.bw != nil {
			bw = &s.bw.layers[l]
		}
		var pw *packedLayer
		if s.pk != nil {
			pw = &s.pk.layers[l]
		}
		m.attnProject(&sc.a, w, bw, pw, sc.x, pos, R)
		r := 0
		// The items' new keys and values go in one call a layer
		// (kernels.WriteCaches): a GPU backend launches one kernel for
		// them all.
		writes = writes[:0]
		for i, it := range items {
			n, q, pn := it.to-it.from, it.s, it.s.pn
			kr, vr := sc.a.kr.View(r*d.Hk, n*d.Hk), sc.a.v.View(r*d.Hk, n*d.Hk)
			var pk, pv kernels.Tensor
			if pn > 0 {
				pk, pv = m.kvLayer(q.prompt.kv, pn, l, kernels.Keys), m.kvLayer(q.prompt.kv, pn, l, kernels.Values)
			}
			if it.to <= pn {
				// Rows of the shared part of the prompt: into its cache.
				writes = append(writes,
					kernels.CacheWriteJob{Cache: pk, Src: kr, Kind: kernels.Keys, Pos0: it.from, Rows: n, Cap: pn},
					kernels.CacheWriteJob{Cache: pv, Src: vr, Kind: kernels.Values, Pos0: it.from, Rows: n, Cap: pn})
				spans[i] = kernels.KVSpan{K: pk, V: pv, Cap: pn, QRow: r, Rows: n, Pos0: it.from}
			} else {
				// it.from ≥ pn (prefillWave splits items at pn).
				oc := q.ownCap()
				kc, vc := m.kvLayer(q.kv, oc, l, kernels.Keys), m.kvLayer(q.kv, oc, l, kernels.Values)
				writes = append(writes,
					kernels.CacheWriteJob{Cache: kc, Src: kr, Kind: kernels.Keys, Pos0: it.from - pn, Rows: n, Cap: oc},
					kernels.CacheWriteJob{Cache: vc, Src: vr, Kind: kernels.Values, Pos0: it.from - pn, Rows: n, Cap: oc})
				spans[i] = kernels.KVSpan{K: kc, V: vc, Cap: oc, QRow: r, Rows: n, Pos0: it.from, PK: pk, PV: pv, PCap: pn, PN: pn}
			}
			r += n
		}
		kernels.WriteCaches(be, writes, d.KVH, d.hd)
		be.AttentionKV(sc.a.att, sc.a.qr, spans, d.H, d.KVH, d.hd)
		m.attnOut(&sc.a, w, bw, pw, sc.x, R)
		m.mlpForward(&sc.a, w, bw, pw, sc.x, sc.x, R)
	}
	last := sc.x
	if R != len(items) {
		last = sc.last
		r := 0
		for i, it := range items {
			r += it.to - it.from
			be.Copy(sc.last.View(i*d.C, d.C), sc.x.View((r-1)*d.C, d.C))
		}
	}
	S := len(items)
	be.RMSNorm(sc.lastn, kernels.Tensor{}, last, m.w.norm, S, d.C, m.Config.RMSNormEps)
	var head, headP kernels.Tensor
	if s.bw != nil {
		head = s.bw.lmHead
	}
	if s.pk != nil {
		headP = s.pk.head
	}
	m.linear(sc.logits, sc.lastn, m.w.lmHead, head, headP, S, d.C, d.V, false)
	// Decoding reuses one host buffer: every sequence's logits from the
	// previous step were sampled before this step runs. Prompt logits may
	// wait for later prefill waves, so they get their own.
	var host []float32
	if prompt {
		host = make([]float32, S*d.V)
	} else {
		s.decodeHost = slices.Grow(s.decodeHost[:0], S*d.V)[:S*d.V]
		host = s.decodeHost
	}
	be.Store(host, sc.logits.View(0, S*d.V))
	for i, it := range items {
		it.s.logits = host[i*d.V : (i+1)*d.V : (i+1)*d.V]
		it.s.n = it.to
		if canonical && it.s.canon == it.from {
			it.s.canon = it.to
		}
	}
}

// ReleaseCaches frees the KV caches the sampler keeps between streams: the
// prefix cache's entries and the pool of freed caches. A caller about to
// train the model calls it (the entries would be stale after the step
// anyway) so that their memory and the training activations' are not held
// at once. It is an error while a stream is open.
func (s *Sampler) ReleaseCaches() error {
	if s.open {
		return errors.New("model: release caches: a stream is open")
	}
	s.cache.clear()
	s.pool.drain()
	return nil
}

// refresh drops caches made from older weights and rebuilds the bf16 copy.
func (s *Sampler) refresh() {
	if s.version == s.m.Version() {
		return
	}
	s.cache.clear()
	s.version = s.m.Version()
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

// prefill fills every sequence's cache with its prompt and sets its first
// logits. A prompt identical to an earlier one in the batch copies that
// one's cache and logits; otherwise the longest prefix shared with the
// prefix cache or with an earlier prompt of the batch is copied and only
// the rest is computed. Prompts that depend on an earlier prompt of the
// batch run in a later wave; each wave is one batched forward pass (split
// at maxRows rows).
func (s *Sampler) prefill(ctx context.Context, seqs []*seqState) error {
	plans, nw := s.planPrefill(seqs)
	for w := 0; w < nw; w++ {
		if err := s.prefillWave(ctx, seqs, plans, w); err != nil {
			return err
		}
	}
	for i, q := range seqs {
		if e := plans[i].dup; e != nil {
			// The shared part is e's; the rest of the prompt is copied.
			s.m.copyKVAt(q.kv, q.ownCap(), 0, e.kv, e.ownCap(), 0, e.n-e.pn)
			q.n, q.canon, q.logits = e.n, e.canon, e.logits
		}
		if q.prompt != nil {
			s.publish(q.prompt)
		}
		s.stats.ReusedTokens += int64(plans[i].start)
		if plans[i].dup != nil {
			s.stats.ReusedTokens += int64(q.n)
		}
	}
	return nil
}

// prefillPlan says how one prompt of a prefill is filled.
type prefillPlan struct {
	dup   *seqState // identical earlier prompt
	src   *seqState // earlier prompt sharing a prefix
	start int       // prompt tokens already in the cache
	wave  int       // -1: filled from the prefix cache, nothing to compute
}

// planPrefill copies what the prefix cache holds into each sequence and
// plans the rest; it returns the plans and the number of waves.
func (s *Sampler) planPrefill(seqs []*seqState) ([]prefillPlan, int) {
	const minShare = 4 // shorter shared prefixes are not worth a later wave
	plans := make([]prefillPlan, len(seqs))
	waveOf := map[*seqState]int{}
	creators := map[uint64][]*seqState{} // of new prompt caches, by tokensKey
	nw := 0
	for i, q := range seqs {
		p := &plans[i]
		P := len(q.req.Prompt)
		s.stats.PromptTokens += int64(P)
		for _, e := range seqs[:i] {
			if slices.Equal(e.req.Prompt, q.req.Prompt) {
				p.dup = e
				break
			}
		}
		if p.dup != nil {
			// The same prompt: the same prompt cache, filled once.
			if q.prompt = p.dup.prompt; q.prompt != nil {
				q.prompt.refs++
				s.stats.SharedTokens += int64(q.pn)
			}
			continue
		}
		ready := s.sharePrompt(q, p, creators, waveOf)
		if e, n := s.cache.lookup(q.req.Prompt); e != nil && n > p.start {
			entry := e.kv.parts()
			if n == P && len(e.logits) > 0 && len(e.tokens) == P {
				s.m.copyParts(q.parts(), entry, p.start, P)
				q.n, q.canon, q.logits, p.start = P, P, e.logits, P
				p.wave = -1
				waveOf[q] = ready
				continue
			}
			if n = min(n, P-1); n > p.start {
				s.m.copyParts(q.parts(), entry, p.start, n)
				q.n, q.canon, p.start = n, n, n
			}
		}
		best := p.start
		for j, e := range seqs[:i] {
			if plans[j].dup != nil {
				continue // filled only after every wave
			}
			if n := min(commonPrefix(e.req.Prompt, q.req.Prompt), P-1); n > best && n >= minShare {
				best, p.src = n, e
			}
		}
		if p.src != nil {
			p.start = best
			p.wave = waveOf[p.src] + 1
		}
		// The rest of the prompt attends to the shared blocks: once filled.
		p.wave = max(p.wave, ready+1)
		waveOf[q] = p.wave
		nw = max(nw, p.wave+1)
	}
	return plans, nw
}

// sharePrompt gives q (not a duplicate) the cache of its prompt's whole
// blocks: a running sequence's of the same tokens, one that an earlier
// prompt of this prefill fills, or a new one that q fills itself (then
// listed in creators). It returns the wave after which a shared cache is
// filled (-1: it is, or q fills its own).
func (s *Sampler) sharePrompt(q *seqState, p *prefillPlan, creators map[uint64][]*seqState, waveOf map[*seqState]int) int {
	if q.pn == 0 {
		return -1
	}
	toks := q.req.Prompt[:q.pn]
	key := tokensKey(toks)
	blk, ready := s.livePrompt(toks), -1
	if blk == nil {
		for _, c := range creators[key] {
			if slices.Equal(c.prompt.tokens, toks) {
				blk, ready = c.prompt, waveOf[c]
				break
			}
		}
	}
	if blk == nil {
		q.prompt = &promptKV{kv: s.m.kvAlloc(s.pool, q.pn), tokens: slices.Clone(toks), refs: 1}
		creators[key] = append(creators[key], q)
		return -1
	}
	q.prompt = blk
	blk.refs++
	s.stats.SharedTokens += int64(q.pn)
	q.n, q.canon, p.start = q.pn, q.pn, q.pn
	return ready
}

// prefillWave computes the prompts of wave w in batched forward passes of
// at most maxRows rows.
func (s *Sampler) prefillWave(ctx context.Context, seqs []*seqState, plans []prefillPlan, w int) error {
	var items []work
	rows := 0
	flush := func() error {
		if len(items) > 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("model: prefill: %w", err)
			}
			s.forward(items, true)
			items, rows = items[:0], 0
		}
		return nil
	}
	for i, q := range seqs {
		p := plans[i]
		if p.dup != nil || p.wave != w {
			continue
		}
		if p.src != nil {
			s.m.copyParts(q.parts(), p.src.parts(), q.n, p.start)
			q.n, q.canon = p.start, p.start
		}
		for from := p.start; from < len(q.req.Prompt); {
			to := min(len(q.req.Prompt), from+maxRows-rows)
			if from < q.pn && to > q.pn {
				to = q.pn // an item lies in one part of the cache
			}
			items = append(items, work{s: q, from: from, to: to})
			rows += to - from
			s.stats.PrefillTokens += int64(to - from)
			from = to
			if rows >= maxRows {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// sampleScratch is reused by sampleToken across tokens.
type sampleScratch struct {
	cand []int32
	w    []float32
}

// sampleToken draws the next token from logits under the request's
// temperature, top-k and top-p, and returns it with its log-probability
// under the unmodified distribution softmax(logits) and that
// distribution's entropy in nats.
func sampleToken(logits []float32, r *Request, rng *rand.Rand, sc *sampleScratch) (int32, float32, float32) {
	mx := logits[0]
	arg := 0
	for i, v := range logits {
		if v > mx {
			mx, arg = v, i
		}
	}
	// e holds exp(logit - max) (the vector kernel's float32 e^x, within
	// 4e-7 relative): the softmax numerators at temperature 1, which is
	// also the sampling weight when the temperature is 1.
	V := len(logits)
	e := slices.Grow(sc.w[:0], V)[:V]
	sc.w = e
	copy(e, logits)
	kernels.ExpSub(e, mx)
	// With d_i = logit_i - max, p_i = e_i / z and the entropy is
	// -Σ p_i log p_i = log z - Σ e_i d_i / z, both sums in float64.
	var z, ed float64
	for i, w := range e {
		z += float64(w)
		ed += float64(w) * float64(logits[i]-mx)
	}
	lse := float64(mx) + math.Log(z)
	ent := float32(max(0, math.Log(z)-ed/z))
	logp := func(t int) float32 { return float32(float64(logits[t]) - lse) }
	if r.Temperature == 0 || r.TopK == 1 {
		return int32(arg), logp(arg), ent
	}
	if r.Temperature != 1 {
		inv := 1 / r.Temperature
		for i, v := range logits {
			e[i] = (v - mx) * inv
		}
		kernels.ExpSub(e, 0)
	}
	k := V
	if r.TopK > 0 {
		k = min(r.TopK, V)
	}
	nucleus := r.TopP > 0 && r.TopP < 1
	if k == V && !nucleus {
		var sum float64
		for _, w := range e {
			sum += float64(w)
		}
		u := rng.Float64() * sum
		var c float64
		for i, w := range e {
			c += float64(w)
			if u < c {
				return int32(i), logp(i), ent
			}
		}
		return int32(V - 1), logp(V - 1), ent
	}
	// Filters need the tokens by decreasing logit (ties by id).
	cand := sc.cand[:0]
	for i := 0; i < V; i++ {
		cand = append(cand, int32(i))
	}
	sc.cand = cand
	slices.SortFunc(cand, func(a, b int32) int {
		if logits[a] != logits[b] {
			if logits[a] > logits[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	cand = cand[:k]
	var sum float64
	for _, t := range cand {
		sum += float64(e[t])
	}
	if nucleus {
		// Keep the smallest prefix whose probability reaches TopP.
		var c float64
		for i, t := range cand {
			c += float64(e[t])
			if c >= float64(r.TopP)*sum {
				cand, sum = cand[:i+1], c
				break
			}
		}
	}
	u := rng.Float64() * sum
	var c float64
	for _, t := range cand {
		c += float64(e[t])
		if u < c {
			return t, logp(int(t)), ent
		}
	}
	t := cand[len(cand)-1]
	return t, logp(int(t)), ent
}
