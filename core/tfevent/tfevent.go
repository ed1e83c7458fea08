// Package tfevent writes and reads TensorBoard event files: TFRecord
// framing (a little-endian uint64 length, the masked CRC32C of those 8
// bytes, the data, the masked CRC32C of the data) around tensorflow.Event
// protocol buffers holding scalar summaries. The protobuf encoding is
// written by hand from the public field numbers of event.proto and
// summary.proto (testdata/tfevent.proto lists the ones used), so no
// protobuf module is needed.
//
// It holds scalars only, and it must never write a record it could not
// read back: every value is checked finite before it is framed.
package tfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// FileVersion is the file_version of an event file's first record, which
// TensorBoard checks.
const FileVersion = "brain.Event:2"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is TFRecord's CRC mask constant.
const maskDelta = 0xa282ead8

// MaskedCRC is TFRecord's masked CRC32C of b: the checksum rotated right
// by 15 bits plus a constant, so that a CRC stored inside checksummed
// data does not checksum to a fixed value.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + maskDelta
}

// Frame appends one TFRecord holding data to dst.
func Frame(dst, data []byte) []byte {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	dst = append(dst, n[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, MaskedCRC(n[:]))
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, MaskedCRC(data))
}

// Event fields (tensorflow/core/util/event.proto).
const (
	fieldWallTime    = 1 // double
	fieldStep        = 2 // int64
	fieldFileVersion = 3 // string
	fieldSummary     = 5 // Summary
)

// Summary fields (tensorflow/core/framework/summary.proto): Summary.value
// is field 1; Summary.Value.tag 1 and simple_value 2.
const (
	fieldSummaryValue = 1
	fieldValueTag     = 1
	fieldSimpleValue  = 2
)

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// Scalar is one value of one tag at one step.
type Scalar struct {
	Tag   string
	Value float32
}

// Event is a decoded event record: the file version (first record) or the
// scalars of one step.
type Event struct {
	WallTime    float64
	Step        int64
	FileVersion string
	Scalars     []Scalar
}

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field<<3|wire))
}

func appendBytes(b []byte, field int, v []byte) []byte {
	b = appendTag(b, field, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// Marshal encodes ev as a tensorflow.Event. A scalar that is not finite,
// or an event with both a file version and scalars, is an error.
func Marshal(ev Event) ([]byte, error) {
	if ev.FileVersion != "" && len(ev.Scalars) > 0 {
		return nil, errors.New("tfevent: an event holds a file version or a summary, not both")
	}
	var b []byte
	b = appendTag(b, fieldWallTime, wireFixed64)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(ev.WallTime))
	if ev.Step != 0 {
		b = appendTag(b, fieldStep, wireVarint)
		b = binary.AppendUvarint(b, uint64(ev.Step))
	}
	if ev.FileVersion != "" {
		return appendBytes(b, fieldFileVersion, []byte(ev.FileVersion)), nil
	}
	var sum []byte
	for _, s := range ev.Scalars {
		if math.IsNaN(float64(s.Value)) || math.IsInf(float64(s.Value), 0) {
			return nil, fmt.Errorf("tfevent: step %d: %s is %v (want a finite value)", ev.Step, s.Tag, s.Value)
		}
		if s.Tag == "" {
			return nil, fmt.Errorf("tfevent: step %d: a scalar without a tag", ev.Step)
		}
		var v []byte
		v = appendBytes(v, fieldValueTag, []byte(s.Tag))
		v = appendTag(v, fieldSimpleValue, wireFixed32)
		v = binary.LittleEndian.AppendUint32(v, math.Float32bits(s.Value))
		sum = appendBytes(sum, fieldSummaryValue, v)
	}
	return appendBytes(b, fieldSummary, sum), nil
}

// Writer writes event records to an io.Writer.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter writes the file-version record to w and returns a Writer
// for the events after it.
func NewWriter(w io.Writer, wallTime float64) (*Writer, error) {
	wr := &Writer{w: w}
	return wr, wr.Write(Event{WallTime: wallTime, FileVersion: FileVersion})
}

// Write frames and writes one event.
func (w *Writer) Write(ev Event) error {
	data, err := Marshal(ev)
	if err != nil {
		return err
	}
	w.buf = Frame(w.buf[:0], data)
	if _, err := w.w.Write(w.buf); err != nil {
		return fmt.Errorf("tfevent: write: %w", err)
	}
	return nil
}
