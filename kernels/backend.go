package kernels

import "fmt"

// Tensor is a handle to a contiguous run of elements owned by a Backend: an
// allocation or a view into one. The model never reads the elements of a
// tensor directly; it moves data in and out with Load and Store, so a device
// backend can keep them in device memory. Handles are small values and are
// passed by value.
type Tensor struct {
	buf any // backend-owned storage (for the CPU backend: []float32, []float64 or []uint16)
	off int // first element of the view inside buf
	n   int // number of elements
}

// MakeTensor is for Backend implementations: it wraps backend storage buf as
// a tensor of n elements starting at element off.
func MakeTensor(buf any, off, n int) Tensor { return Tensor{buf: buf, off: off, n: n} }

// Len returns the number of elements the tensor holds.
func (t Tensor) Len() int { return t.n }

// Storage returns the backend storage and the view's offset into it; only a
// Backend implementation may use them.
func (t Tensor) Storage() (buf any, off int) { return t.buf, t.off }

// IsZero reports whether t is the zero Tensor (no storage). Ops document
// which of their outputs may be zero to skip them.
func (t Tensor) IsZero() bool { return t.buf == nil }

// View returns the n elements of t starting at element off. It panics if the
// view does not lie inside t (a programmer error).
func (t Tensor) View(off, n int) Tensor {
	if off < 0 || n < 0 || off+n > t.n {
		panic(fmt.Sprintf("kernels: view [%d:%d] of a tensor of %d elements", off, off+n, t.n))
	}
	return Tensor{buf: t.buf, off: t.off + off, n: n}
}

// KVSpan describes the queries of one sequence in AttentionKV: query rows
// QRow..QRow+Rows-1 of q sit at positions Pos0..Pos0+Rows-1 of the sequence
// and attend causally to positions 0..Pos0+r of the sequence's key and
// value caches K and V. A cache of capacity Cap holds KVH·Cap·hd elements
// in a layout only the backend knows: fill it with CacheWrite, copy
// positions with CacheCopy.
//
// A span may split its positions in two caches: with PN > 0 (a multiple of
// PrefixGranule(backend)), positions 0..PN-1 are those of the prefix cache PK, PV
// (capacity PCap ≥ PN: a prompt several sequences share) and position
// p ≥ PN is row p-PN of K and V; the span's rows must then all sit at
// positions ≥ PN. A split never changes a result: a row's values are
// summed in position order, whichever cache holds a position.
// KVBlock is the granule of the prefix split of a KVSpan on a backend
// that names none (PrefixGranule): the CUDA attention kernel sums a row's
// scores in blocks of KVBlock positions, so a split elsewhere would change
// its results.
const KVBlock = 128

// PrefixGranule is the granule of the prefix split of a KVSpan on be (a
// span's PN must be a multiple of it): the backend's own where it has a
// method PrefixGranule() int, KVBlock otherwise. A multiple of it is a
// multiple of every granule's, so KVBlock splits suit any backend.
func PrefixGranule(be Backend) int {
	if g, ok := be.(interface{ PrefixGranule() int }); ok {
		return g.PrefixGranule()
	}
	return KVBlock
}

// RootSpans says whether be reads the roots of KVSpans (RK, RN): a caller
// that records them for a backend that does not only keeps their caches
// alive for nothing.
func RootSpans(be Backend) bool {
	r, ok := be.(interface{ RootSpans() bool })
	return ok && r.RootSpans()
}

// KVKind says whether a KV cache holds keys or values: a backend may lay
// the two out differently (the CPU backend does: keys in blocks of
// positions for the scores, values position by position for the sums).
type KVKind uint8

const (
	Keys KVKind = iota
	Values
)

// String names the kind.
func (k KVKind) String() string {
	if k == Keys {
		return "keys"
	}
	return "values"
}

// KVCapGranule is the capacity granule a backend reads KV caches fastest
// in: any capacity works, but the CPU backend stores keys in blocks of 8
// positions and reads a last, narrower block through a copy.
const KVCapGranule = kvBlock

type KVSpan struct {
	K, V                  Tensor
	Cap, QRow, Rows, Pos0 int
	PK, PV                Tensor
	PCap, PN              int
	// With RN > 0 (a multiple of PrefixGranule(backend), at most PN),
	// positions 0..RN-1 of the prefix cache hold, bit for bit, what
	// positions 0..RN-1 of the root cache RK, RV (capacity RCap ≥ RN)
	// hold: a system prompt that the prompts of many tasks begin with,
	// copied from one cache into each. A backend may read those positions
	// from either, so the root never changes a result; the CPU backend
	// scores the rows of all the spans of one root against it together
	// (attn_root.go), where each prompt's copy would be read row by row.
	RK, RV   Tensor
	RCap, RN int
}

// AdamW holds the hyper-parameters of one AdamW update. Step is the 1-based
// step number used for bias correction. GradScale multiplies every gradient
// before use (global-norm clipping folds into it; 1 means none).
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	GradScale                          float64
	Step                               int
}

// Backend runs the ops of whale's transformer on tensors it owns. Ops put the
// output first, then inputs, then sizes. Shapes are row-major; a shape in a
// comment such as (N,C) means N rows of C elements. Backward ops ADD into
// their gradient outputs (dx += ...), so gradients of parameters accumulate
// over micro-batches and a residual stream's gradient flows through one
// buffer; the caller zeroes gradient buffers when a fresh sum starts. Ops
// panic on a size mismatch (a programmer error).
//
// Every op must be deterministic: the same inputs give bit-identical outputs
// whatever the number of threads.
type Backend interface {
	// Name identifies the backend and its element type, e.g. "cpu/float32".
	Name() string

	// Alloc returns a zeroed tensor of n elements of the backend's float type.
	Alloc(n int) Tensor
	// AllocBF16 returns a zeroed tensor of n bfloat16 elements (weights
	// stored for inference; only ToBF16 and GemmBF16NT use it).
	AllocBF16(n int) Tensor
	// Free releases an allocation (not a view). The tensor must not be used
	// afterwards.
	Free(t Tensor)
	// Load copies host values into dst (len(src) == dst.Len()).
	Load(dst Tensor, src []float32)
	// Store copies src into host memory (len(dst) == src.Len()).
	Store(dst []float32, src Tensor)
	// Load64 and Store64 are Load and Store in float64, so that a float64
	// backend can be driven without rounding (gradient checks).
	Load64(dst Tensor, src []float64)
	Store64(dst []float64, src Tensor)
	// Fill sets every element of dst to v.
	Fill(dst Tensor, v float32)
	// Copy copies src into dst (same length; they must not overlap).
	Copy(dst, src Tensor)
	// ToBF16 rounds src (float) into dst (bfloat16), to nearest even.
	ToBF16(dst, src Tensor)

	// Gemm computes out (m,n) = a·b in the given layout (see Layout),
	// adding to out when acc is set.
	Gemm(layout Layout, out, a, b Tensor, m, k, n int, acc bool)
	// GemmBF16NT is Gemm NT with b a bfloat16 tensor (n,k).
	GemmBF16NT(out, a, b Tensor, m, k, n int, acc bool)

	// Add sets out = a + b elementwise; out may alias a or b.
	Add(out, a, b Tensor)
	// Scale multiplies x by s in place.
	Scale(x Tensor, s float32)
	// SumSq returns the sum of squares of x, accumulated in float64.
	SumSq(x Tensor) float64
	// AllFinite reports whether x holds no NaN or Inf.
	AllFinite(x Tensor) bool

	// BiasAdd: out (rows,n) += bias (n) on every row.
	BiasAdd(out, bias Tensor, rows, n int)
	// BiasBackward: dbias (n) += sum over rows of dout (rows,n).
	BiasBackward(dbias, dout Tensor, rows, n int)

	// Embedding: out (len(tokens),C) = rows tokens of table (V,C).
	Embedding(out, table Tensor, tokens []int32, C int)
	// EmbeddingBackward: dtable (V,C) row tokens[i] += dout row i.
	EmbeddingBackward(dtable, dout Tensor, tokens []int32, C int)

	// RMSNorm: out (rows,C) = x·rstd·w with rstd (rows) = 1/sqrt(mean(x²)+eps)
	// saved for the backward pass (rstd may be zero to skip saving it).
	RMSNorm(out, rstd, x, w Tensor, rows, C int, eps float64)
	// RMSNormBackward: dx (rows,C) += ∂L/∂x and dw (C) += ∂L/∂w from dout,
	// the forward input x, the weight w and the saved rstd; dw may be zero
	// (a frozen weight) to skip its gradient.
	RMSNormBackward(dx, dw, dout, x, w, rstd Tensor, rows, C int)

	// RoPE rotates every head of x (rows, heads*hd) by its row's position
	// pos[row], HF rotate-half convention: pairs (i, i+hd/2) rotate by angle
	// pos·theta^(-2i/hd). out may alias x.
	RoPE(out, x Tensor, pos []int32, rows, heads, hd int, theta float64)
	// RoPEBackward: dx += the inverse rotation of dout.
	RoPEBackward(dx, dout Tensor, pos []int32, rows, heads, hd int, theta float64)

	// Attention is causal softmax attention for training over B sequences of
	// T positions: q (B*T, H*hd), k and v (B*T, KVH*hd), query head h reads
	// key/value head h/(H/KVH). out (B*T, H*hd); lse (B*H*T, laid out
	// [b][h][t]) saves each row's log-sum-exp for the backward pass.
	Attention(out, lse, q, k, v Tensor, B, T, H, KVH, hd int)
	// AttentionBackward adds into dq, dk, dv from dout and the forward's
	// inputs and outputs; it recomputes the probabilities from lse.
	AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v Tensor, B, T, H, KVH, hd int)
	// AttentionKV is causal attention of query rows against per-sequence
	// key/value caches (prefill and decoding): out (rows of q, H*hd). A
	// row's result depends only on its query and the cache rows it sees,
	// never on the other rows or spans of the call.
	AttentionKV(out, q Tensor, spans []KVSpan, H, KVH, hd int)
	// CacheWrite stores rows (rows, KVH*hd) of keys or values (kind) into
	// a cache of capacity cap (see KVSpan) at positions pos0..pos0+rows-1.
	CacheWrite(cache, src Tensor, kind KVKind, pos0, rows, KVH, hd, cap int)
	// CacheCopy copies positions srcPos..srcPos+n-1 of cache src
	// (capacity srcCap) to positions dstPos.. of cache dst (capacity
	// dstCap), both holding kind.
	CacheCopy(dst, src Tensor, kind KVKind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap int)

	// SwiGLU: out = silu(gate)·up elementwise.
	SwiGLU(out, gate, up Tensor)
	// SwiGLUBackward: dgate += ∂L/∂gate, dup += ∂L/∂up from dout.
	SwiGLUBackward(dgate, dup, dout, gate, up Tensor)

	// CrossEntropy of logits (rows,V) against targets: loss[r] =
	// weight[r]·(logsumexp(logits[r]) - logits[r][targets[r]]) and
	// dlogits[r] = weight[r]·(softmax(logits[r]) - onehot(targets[r])),
	// overwritten (not added). Rows with weight 0 get loss 0 and a zero
	// gradient and their target is not read. dlogits may alias logits, and
	// may be zero to skip the gradient.
	CrossEntropy(loss, dlogits, logits Tensor, targets []int32, weight []float32, rows, V int)

	// AdamWUpdate applies one AdamW step (decoupled weight decay, bias
	// correction) to params p using gradients g and moments m, v.
	AdamWUpdate(p, g, m, v Tensor, h AdamW)
}
