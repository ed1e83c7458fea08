package kernels

// kvTransposeBlocksAVX2 is kvTransposeBlocks for hd a positive multiple of
// 4 (AVX2: a dimension's 8 positions one vector).
//
//go:noescape
func kvTransposeBlocksAVX2(dst *float32, ld int, src *float32, hd, blocks int)
