package ckpt

import (
	"encoding/binary"
	"fmt"
	"math"
)

// A GGUF reader for the tests, written from the spec apart from the
// writer: it decodes every value type the spec defines (not only those
// the writer emits) and checks every length against the bytes left.

type ggufFile struct {
	version uint32
	keys    []string // in file order
	kv      map[string]any
	tensors []ggufTensor
	// data is the tensor data section (from the aligned end of the
	// tensor descriptions).
	data []byte
}

type ggufTensor struct {
	name string
	dims []uint64 // fastest-varying first
	typ  uint32
	off  uint64
}

type ggufReader struct {
	b   []byte
	pos int
}

func (r *ggufReader) take(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, fmt.Errorf("offset %d: want %d bytes, %d left", r.pos, n, len(r.b)-r.pos)
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

func (r *ggufReader) u32() (uint32, error) {
	b, err := r.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *ggufReader) u64() (uint64, error) {
	b, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *ggufReader) str() (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	b, err := r.take(n)
	return string(b), err
}

// scalar reads one value of a non-array type.
func (r *ggufReader) scalar(typ uint32) (any, error) {
	size := map[uint32]uint64{ggufUint8: 1, ggufInt8: 1, ggufBool: 1, ggufUint16: 2, ggufInt16: 2, ggufUint32: 4,
		ggufInt32: 4, ggufFloat32: 4, ggufUint64: 8, ggufInt64: 8, ggufFloat64: 8}
	if typ == ggufString {
		return r.str()
	}
	n, ok := size[typ]
	if !ok {
		return nil, fmt.Errorf("offset %d: unknown value type %d", r.pos, typ)
	}
	b, err := r.take(n)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch typ {
	case ggufUint8:
		return b[0], nil
	case ggufInt8:
		return int8(b[0]), nil
	case ggufBool:
		if b[0] > 1 {
			return nil, fmt.Errorf("offset %d: bool byte %d", r.pos-1, b[0])
		}
		return b[0] == 1, nil
	case ggufUint16:
		return le.Uint16(b), nil
	case ggufInt16:
		return int16(le.Uint16(b)), nil
	case ggufUint32:
		return le.Uint32(b), nil
	case ggufInt32:
		return int32(le.Uint32(b)), nil
	case ggufFloat32:
		return math.Float32frombits(le.Uint32(b)), nil
	case ggufUint64:
		return le.Uint64(b), nil
	case ggufInt64:
		return int64(le.Uint64(b)), nil
	}
	return math.Float64frombits(le.Uint64(b)), nil
}

// value reads a typed value; arrays of strings and of int32 come back as
// []string and []int32, other arrays as []any.
func (r *ggufReader) value(typ uint32) (any, error) {
	if typ != ggufArray {
		return r.scalar(typ)
	}
	et, err := r.u32()
	if err != nil {
		return nil, err
	}
	n, err := r.u64()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)-r.pos) { // every element takes at least a byte
		return nil, fmt.Errorf("offset %d: array of %d elements in %d bytes", r.pos, n, len(r.b)-r.pos)
	}
	var strs []string
	var ints []int32
	var anys []any
	for range n {
		v, err := r.value(et)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			strs = append(strs, x)
		case int32:
			ints = append(ints, x)
		default:
			anys = append(anys, x)
		}
	}
	switch et {
	case ggufString:
		if strs == nil {
			strs = []string{}
		}
		return strs, nil
	case ggufInt32:
		return ints, nil
	}
	return anys, nil
}

func readGGUF(b []byte) (*ggufFile, error) {
	r := &ggufReader{b: b}
	magic, err := r.take(4)
	if err != nil || string(magic) != "GGUF" {
		return nil, fmt.Errorf("not a GGUF file (magic %q, %v)", magic, err)
	}
	f := &ggufFile{kv: map[string]any{}}
	if f.version, err = r.u32(); err != nil {
		return nil, err
	}
	nt, err := r.u64()
	if err != nil {
		return nil, err
	}
	nkv, err := r.u64()
	if err != nil {
		return nil, err
	}
	for range nkv {
		k, err := r.str()
		if err != nil {
			return nil, err
		}
		typ, err := r.u32()
		if err != nil {
			return nil, err
		}
		if _, dup := f.kv[k]; dup {
			return nil, fmt.Errorf("key %s twice", k)
		}
		if f.kv[k], err = r.value(typ); err != nil {
			return nil, fmt.Errorf("key %s: %w", k, err)
		}
		f.keys = append(f.keys, k)
	}
	for range nt {
		var t ggufTensor
		if t.name, err = r.str(); err != nil {
			return nil, err
		}
		nd, err := r.u32()
		if err != nil || nd > 4 {
			return nil, fmt.Errorf("tensor %s: %d dims (%v)", t.name, nd, err)
		}
		for range nd {
			d, err := r.u64()
			if err != nil {
				return nil, err
			}
			t.dims = append(t.dims, d)
		}
		if t.typ, err = r.u32(); err != nil {
			return nil, err
		}
		if t.off, err = r.u64(); err != nil {
			return nil, err
		}
		f.tensors = append(f.tensors, t)
	}
	align := uint64(32)
	if a, ok := f.kv["general.alignment"].(uint32); ok {
		align = uint64(a)
	}
	start := (uint64(r.pos) + align - 1) / align * align
	if start > uint64(len(b)) {
		return nil, fmt.Errorf("data section starts at %d, past the end %d", start, len(b))
	}
	f.data = b[start:]
	return f, nil
}

// tensorData returns t's bytes, checked to lie inside the data section.
func (f *ggufFile) tensorData(t ggufTensor, elemSize uint64) ([]byte, error) {
	n := elemSize
	for _, d := range t.dims {
		n *= d
	}
	if t.off > uint64(len(f.data)) || n > uint64(len(f.data))-t.off {
		return nil, fmt.Errorf("tensor %s: %d bytes at %d, data section %d bytes", t.name, n, t.off, len(f.data))
	}
	return f.data[t.off : t.off+n], nil
}
