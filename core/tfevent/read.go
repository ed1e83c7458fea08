package tfevent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxRecord bounds a record's length as read from a file, checked before
// the length sizes anything.
const MaxRecord = 64 << 20

// ErrCorrupt is wrapped by every error about bytes that are not a valid
// record (a checksum that does not match, a length past MaxRecord, a
// record cut short, a protobuf that does not decode).
var ErrCorrupt = errors.New("tfevent: corrupt event file")

// Reader reads the events of a file written by Writer (or TensorFlow).
type Reader struct {
	r   *bufio.Reader
	off int64
	n   int
}

// NewReader reads records from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReader(r)} }

// Next returns the next event, io.EOF after the last one.
func (r *Reader) Next() (Event, error) {
	data, err := r.record()
	if err != nil {
		return Event{}, err
	}
	ev, err := Unmarshal(data)
	if err != nil {
		return ev, fmt.Errorf("%w: record %d (offset %d): %v", ErrCorrupt, r.n, r.off, err)
	}
	return ev, nil
}

// ReadAll reads every event of r.
func ReadAll(r io.Reader) ([]Event, error) {
	rd := NewReader(r)
	var out []Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func (r *Reader) record() ([]byte, error) {
	r.n++
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: record %d (offset %d): %s", ErrCorrupt, r.n, r.off, fmt.Sprintf(format, args...))
	}
	var head [12]byte
	if _, err := io.ReadFull(r.r, head[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, bad("header cut short")
	}
	if got, want := binary.LittleEndian.Uint32(head[8:]), MaskedCRC(head[:8]); got != want {
		return nil, bad("length checksum %#08x, want %#08x", got, want)
	}
	n := binary.LittleEndian.Uint64(head[:8])
	if n > MaxRecord {
		return nil, bad("length %d past the %d-byte bound", n, MaxRecord)
	}
	data := make([]byte, n+4)
	if _, err := io.ReadFull(r.r, data); err != nil {
		return nil, bad("%d-byte record cut short", n)
	}
	data, sum := data[:n], data[n:]
	if got, want := binary.LittleEndian.Uint32(sum), MaskedCRC(data); got != want {
		return nil, bad("data checksum %#08x, want %#08x", got, want)
	}
	r.off += 12 + int64(n) + 4
	return data, nil
}

// field is one decoded protobuf field.
type field struct {
	num, wire int
	u         uint64 // varint, fixed64, fixed32
	b         []byte // length-delimited
}

// fields decodes a protobuf message's fields in order.
func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad field key")
		}
		b = b[n:]
		f := field{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case wireVarint:
			f.u, n = binary.Uvarint(b)
			if n <= 0 {
				return nil, fmt.Errorf("field %d: bad varint", f.num)
			}
			b = b[n:]
		case wireFixed64:
			if len(b) < 8 {
				return nil, fmt.Errorf("field %d: cut short", f.num)
			}
			f.u, b = binary.LittleEndian.Uint64(b), b[8:]
		case wireFixed32:
			if len(b) < 4 {
				return nil, fmt.Errorf("field %d: cut short", f.num)
			}
			f.u, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return nil, fmt.Errorf("field %d: bad length", f.num)
			}
			f.b, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return nil, fmt.Errorf("field %d: wire type %d not read here", f.num, f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// Unmarshal decodes a tensorflow.Event: its wall time, step, file version
// and the simple_value scalars of its summary (other fields are skipped).
func Unmarshal(b []byte) (Event, error) {
	var ev Event
	fs, err := fields(b)
	if err != nil {
		return ev, fmt.Errorf("event: %v", err)
	}
	for _, f := range fs {
		switch {
		case f.num == fieldWallTime && f.wire == wireFixed64:
			ev.WallTime = math.Float64frombits(f.u)
		case f.num == fieldStep && f.wire == wireVarint:
			ev.Step = int64(f.u)
		case f.num == fieldFileVersion && f.wire == wireBytes:
			ev.FileVersion = string(f.b)
		case f.num == fieldSummary && f.wire == wireBytes:
			vals, err := fields(f.b)
			if err != nil {
				return ev, fmt.Errorf("summary: %v", err)
			}
			for _, v := range vals {
				if v.num != fieldSummaryValue || v.wire != wireBytes {
					continue
				}
				s, ok, err := scalar(v.b)
				if err != nil {
					return ev, err
				}
				if ok {
					ev.Scalars = append(ev.Scalars, s)
				}
			}
		}
	}
	return ev, nil
}

// scalar decodes a Summary.Value; ok is false when it holds no
// simple_value.
func scalar(b []byte) (Scalar, bool, error) {
	fs, err := fields(b)
	if err != nil {
		return Scalar{}, false, fmt.Errorf("summary value: %v", err)
	}
	var s Scalar
	ok := false
	for _, f := range fs {
		switch {
		case f.num == fieldValueTag && f.wire == wireBytes:
			s.Tag = string(f.b)
		case f.num == fieldSimpleValue && f.wire == wireFixed32:
			s.Value, ok = math.Float32frombits(uint32(f.u)), true
		}
	}
	return s, ok, nil
}
