package kernels

// widenBF16AVX2 widens n bfloat16 values (n a positive multiple of 16)
// exactly, as the Go loop
//
//	for i := 0; i < n; i++ {
//		dst[i] = math.Float32frombits(uint32(src[i]) << 16)
//	}
//
//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

// widenBF16AVX512 is widenBF16AVX2 for n a positive multiple of 32.
//
//go:noescape
func widenBF16AVX512(dst *float32, src *uint16, n int)

// widenBF16Asm widens the longest prefix of src the assembly takes and
// returns its length.
func widenBF16Asm(dst []float32, src []uint16) int {
	n := len(src)
	if useAVX512 && n >= 32 {
		n &^= 31
		widenBF16AVX512(&dst[0], &src[0], n)
		return n
	}
	if n < 16 {
		return 0
	}
	n &^= 15
	widenBF16AVX2(&dst[0], &src[0], n)
	return n
}
