package kerneltest

import "fmt"

// DType is the element type an op computes on.
type DType string

const (
	F32  DType = "f32"
	BF16 DType = "bf16"
)

// tolerances bounds, per op and element type, the normalised error
// max|got−ref|/max|ref| of every output that is not exact, against the
// float64 reference. A wrong index, a missed or doubled term, a wrong
// formula is of order 1e-1 to 1; these bounds sit one to two orders of
// magnitude above what correct float32 arithmetic reaches on the table's
// shapes, whichever order a backend sums in.
var tolerances = map[string]map[DType]float64{
	// float32 rounds at 6e-8 relative; the longest sums of the table
	// (k = 4096 products, 1024-position attention rows, a 151936-token
	// softmax) drift like a random walk to ~1e-6 of the output's scale in
	// any summation order (tree, tiled, sequential).
	"Gemm":              {F32: 1e-5},
	"Attention":         {F32: 1e-5},
	"AttentionBackward": {F32: 1e-5},
	"AttentionKV":       {F32: 1e-5},
	"CacheCopy":         {F32: 1e-5}, // seen through AttentionKV
	"CrossEntropy":      {F32: 1e-5},
	"RMSNorm":           {F32: 1e-5},
	"RMSNormBackward":   {F32: 1e-5},
	"BiasBackward":      {F32: 1e-5},
	"EmbeddingBackward": {F32: 1e-5},
	"SumSq":             {F32: 1e-5},
	// One or two roundings an element (a sum, a product, exp): 1e-5 is
	// ~100 ulps.
	"Add":            {F32: 1e-5},
	"Scale":          {F32: 1e-5},
	"BiasAdd":        {F32: 1e-5},
	"SwiGLU":         {F32: 1e-5},
	"SwiGLUBackward": {F32: 1e-5},
	// The angle pos·θ^(−2i/hd) formed in float64 and rounded once; formed
	// in float32 it is off by ~1e-4 at position 4000 and fails.
	"RoPE":         {F32: 1e-5},
	"RoPEBackward": {F32: 1e-5},
	// The update forms 1−β in float32: for β2 = 0.999 that alone moves v
	// by 1.3e-5 relative (float32(0.999) = 0.99900001), and the step
	// divides by √v̂. 1e-4 keeps the bound ~4× above it; a dropped bias
	// correction (×8 on m̂ at step 1) or decay (a tenth of the step) is
	// far outside.
	"AdamW": {F32: 1e-4},
	// b holds bfloat16 weights; a device may round the float32 operand a
	// to bfloat16 as well for its tensor cores (2⁻⁹ relative a term, the
	// products summed in float32), which stays within 1e-2 of the output's
	// scale. The CPU keeps a in float32, and kernels' own bf16 tests
	// hold it to GemmBF16NTRef within the float32 GEMM's bound.
	"GemmBF16NT": {BF16: 1e-2},
}

// Tolerance returns the bound for op in element type dt; it panics when
// the table has none (a case naming an op the table does not judge is a
// programmer error).
func Tolerance(op string, dt DType) float64 {
	tol, ok := tolerances[op][dt]
	if !ok {
		panic(fmt.Sprintf("kerneltest: no tolerance for op %s in %s", op, dt))
	}
	return tol
}
