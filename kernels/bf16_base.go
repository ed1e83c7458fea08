package kernels

// BF16Base is what a backend offers for training over frozen weights held
// in bfloat16 only (a LoRA model's base, model.FreezeBF16): the forward
// pass's products are GemmBF16NT; the backward pass's input gradient
// dx = dy·W needs GemmBF16NN, the token lookup EmbeddingBF16, and reading
// the weights back FromBF16. A backend without it trains over float
// weights only.
type BF16Base interface {
	// FromBF16 widens src (bfloat16) into dst (float) exactly.
	FromBF16(dst, src Tensor)
	// GemmBF16NN is Gemm NN with b a bfloat16 tensor (k,n).
	GemmBF16NN(out, a, b Tensor, m, k, n int, acc bool)
	// EmbeddingBF16 is Embedding over a bfloat16 table (V,C), widened.
	EmbeddingBF16(out, table Tensor, tokens []int32, C int)
}

var (
	_ BF16Base = (*CPU[float32])(nil)
	_ BF16Base = (*CPU[float64])(nil)
)

// FromBF16 implements BF16Base.
func (c *CPU[T]) FromBF16(dst, src Tensor) {
	d, s := c.s(dst), opBF16s(src)
	same("FromBF16", len(d), len(s))
	Parallel(len(d), 1<<14, func(lo, hi int) {
		for i, h := range s[lo:hi] {
			d[lo+i] = T(bf16ToFloat(h))
		}
	})
}

// GemmBF16NN implements BF16Base.
func (c *CPU[T]) GemmBF16NN(out, a, b Tensor, m, k, n int, acc bool) {
	o, x, y := c.s(out), c.s(a), opBF16s(b)
	need("GemmBF16NN out", len(o), m*n)
	need("GemmBF16NN a", len(x), m*k)
	need("GemmBF16NN b", len(y), k*n)
	if of, ok := any(o).([]float32); ok {
		GemmBF16NN(of, any(x).([]float32), y, m, k, n, acc)
		return
	}
	GemmBF16NNRef(o, x, y, m, k, n, acc)
}

// EmbeddingBF16 implements BF16Base.
func (c *CPU[T]) EmbeddingBF16(out, table Tensor, tokens []int32, C int) {
	o, w := c.s(out), opBF16s(table)
	need("EmbeddingBF16 out", len(o), len(tokens)*C)
	checkTokens(tokens, len(w)/C)
	Parallel(len(tokens), rowGrain(C), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t := int(tokens[i])
			for j, h := range w[t*C : t*C+C] {
				o[i*C+j] = T(bf16ToFloat(h))
			}
		}
	})
}
