// Package ckpt reads and writes model checkpoints: the safetensors format
// with HF tensor names (f32, bf16 and f16 storage), HF-style directories, and
// the model's own checkpoints with their metadata.
//
// Reading never trusts a file: every offset, shape and dtype is checked
// before a byte is used, and errors name the file and the tensor.
package ckpt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"whale/internal/readcap"
)

// DType is a safetensors storage type.
type DType string

const (
	F32  DType = "F32"
	BF16 DType = "BF16"
	F16  DType = "F16"
)

func (d DType) size() int {
	switch d {
	case F32:
		return 4
	case BF16, F16:
		return 2
	}
	return 0
}

// ParseDType accepts f32, bf16 and f16 in any case.
func ParseDType(s string) (DType, error) {
	switch d := DType(bytes.ToUpper([]byte(s))); d {
	case F32, BF16, F16:
		return d, nil
	}
	return "", fmt.Errorf("ckpt: unknown dtype %q (want f32, bf16 or f16)", s)
}

// Tensor is a named tensor to write; Data is always float32 in memory and
// converted to DType on the way out.
type Tensor struct {
	Name  string
	Shape []int
	DType DType
	Data  []float32
}

type headerEntry struct {
	DType   DType    `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// maxHeader bounds the JSON header a reader accepts (safetensors' own
// readers use 100 MB).
const maxHeader = 100 << 20

// Encode serialises tensors and string metadata as safetensors. Tensors are
// laid out in name order, so the same input gives the same bytes.
func Encode(tensors []Tensor, meta map[string]string) ([]byte, error) {
	ts := slices.Clone(tensors)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	var off int64
	for i, t := range ts {
		if t.Name == "" || t.Name == "__metadata__" {
			return nil, fmt.Errorf("ckpt: tensor %d has the invalid name %q", i, t.Name)
		}
		if i > 0 && ts[i-1].Name == t.Name {
			return nil, fmt.Errorf("ckpt: tensor %s appears twice", t.Name)
		}
		if t.DType.size() == 0 {
			return nil, fmt.Errorf("ckpt: tensor %s: unknown dtype %q", t.Name, t.DType)
		}
		if n := numel(t.Shape); n != len(t.Data) {
			return nil, fmt.Errorf("ckpt: tensor %s: shape %v holds %d values but %d were given", t.Name, t.Shape, n, len(t.Data))
		}
		size := int64(len(t.Data) * t.DType.size())
		header[t.Name] = headerEntry{DType: t.DType, Shape: shapeOrEmpty(t.Shape), Offsets: [2]int64{off, off + size}}
		off += size
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return nil, fmt.Errorf("ckpt: encode header: %w", err)
	}
	for len(hj)%8 != 0 { // align the data section, as HF's writer does
		hj = append(hj, ' ')
	}
	out := make([]byte, 8, 8+len(hj)+int(off))
	binary.LittleEndian.PutUint64(out, uint64(len(hj)))
	out = append(out, hj...)
	for _, t := range ts {
		out = appendData(out, t.DType, t.Data)
	}
	return out, nil
}

func appendData(out []byte, d DType, data []float32) []byte {
	for _, v := range data {
		switch d {
		case F32:
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		case BF16:
			out = binary.LittleEndian.AppendUint16(out, bf16FromF32(v))
		case F16:
			out = binary.LittleEndian.AppendUint16(out, f16FromF32(v))
		}
	}
	return out
}

func shapeOrEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// WriteFile writes a safetensors file atomically: to a temporary file in the
// same directory, synced, then renamed, so a crash never leaves a torn file
// under path.
func WriteFile(path string, tensors []Tensor, meta map[string]string) error {
	b, err := Encode(tensors, meta)
	if err != nil {
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	return writeAtomic(path, b)
}

func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("ckpt: write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("ckpt: write %s: %w", path, err)
	}
	return nil
}

// File is a parsed safetensors file whose header has been checked.
type File struct {
	Name    string // for error messages: the file name or "<memory>"
	Meta    map[string]string
	entries map[string]headerEntry
	data    []byte
}

// ErrNotFound is returned (wrapped) for a tensor a file does not hold.
var ErrNotFound = errors.New("tensor not found")

// ReadFile reads and checks a safetensors file.
func ReadFile(path string) (*File, error) {
	b, err := readcap.File(path, readcap.Weights, "safetensors file")
	if err != nil {
		return nil, fmt.Errorf("ckpt: %w", err)
	}
	return Decode(b, path)
}

// Decode checks a safetensors image: header size, JSON, dtypes, shapes
// against byte ranges, ranges inside the data and not overlapping. name is
// used in errors.
func Decode(b []byte, name string) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("ckpt: %s: truncated: %d bytes, a safetensors file starts with an 8-byte header size", name, len(b))
	}
	hn := binary.LittleEndian.Uint64(b)
	if hn > maxHeader || hn > uint64(len(b)-8) {
		return nil, fmt.Errorf("ckpt: %s: header size %d exceeds the file (%d bytes) or the %d-byte limit", name, hn, len(b), maxHeader)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+hn], &raw); err != nil {
		return nil, fmt.Errorf("ckpt: %s: header is not a JSON object: %w", name, err)
	}
	f := &File{Name: name, entries: map[string]headerEntry{}, data: b[8+hn:]}
	type span struct {
		lo, hi int64
		name   string
	}
	var spans []span
	for k, v := range raw {
		if k == "__metadata__" {
			if err := json.Unmarshal(v, &f.Meta); err != nil {
				return nil, fmt.Errorf("ckpt: %s: __metadata__ must map strings to strings: %w", name, err)
			}
			continue
		}
		var e headerEntry
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("ckpt: %s: tensor %s: bad header entry: %w", name, k, err)
		}
		if e.DType.size() == 0 {
			return nil, fmt.Errorf("ckpt: %s: tensor %s: unsupported dtype %q (want F32, BF16 or F16)", name, k, e.DType)
		}
		n := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && n > math.MaxInt32*int64(64)/int64(d)) {
				return nil, fmt.Errorf("ckpt: %s: tensor %s: bad shape %v", name, k, e.Shape)
			}
			n *= int64(d)
		}
		lo, hi := e.Offsets[0], e.Offsets[1]
		if lo < 0 || hi < lo || hi > int64(len(f.data)) {
			return nil, fmt.Errorf("ckpt: %s: tensor %s: data_offsets [%d, %d] outside the %d data bytes (truncated file?)", name, k, lo, hi, len(f.data))
		}
		if hi-lo != n*int64(e.DType.size()) {
			return nil, fmt.Errorf("ckpt: %s: tensor %s: shape %v of %s needs %d bytes, data_offsets give %d", name, k, e.Shape, e.DType, n*int64(e.DType.size()), hi-lo)
		}
		f.entries[k] = e
		spans = append(spans, span{lo, hi, k})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return nil, fmt.Errorf("ckpt: %s: tensors %s and %s overlap", name, spans[i-1].name, spans[i].name)
		}
	}
	return f, nil
}

// Names lists the tensors in the file, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.entries))
	for k := range f.entries {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Info returns a tensor's dtype and shape.
func (f *File) Info(name string) (DType, []int, bool) {
	e, ok := f.entries[name]
	return e.DType, e.Shape, ok
}

// Float32 returns a tensor converted to float32 after checking that its
// shape is want. Errors name the file and the tensor.
func (f *File) Float32(name string, want []int) ([]float32, error) {
	e, ok := f.entries[name]
	if !ok {
		return nil, fmt.Errorf("ckpt: %s: tensor %s: %w", f.Name, name, ErrNotFound)
	}
	if !slices.Equal(e.Shape, want) {
		return nil, fmt.Errorf("ckpt: %s: tensor %s has shape %v, the model expects %v", f.Name, name, e.Shape, want)
	}
	raw := f.data[e.Offsets[0]:e.Offsets[1]]
	out := make([]float32, numel(e.Shape))
	switch e.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = bf16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case F16:
		for i := range out {
			out[i] = f16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	}
	return out, nil
}
