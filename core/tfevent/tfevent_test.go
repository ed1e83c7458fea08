package tfevent

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/framing.golden")

// TestCRC32CMatchesPublishedVectors checks the checksum under the mask
// against RFC 3720's vectors and the usual check value.
func TestCRC32CMatchesPublishedVectors(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want uint32
	}{
		{[]byte("123456789"), 0xe3069283},
		{make([]byte, 32), 0x8a9136aa},
		{bytes.Repeat([]byte{0xff}, 32), 0x62a8ab43},
	} {
		if got := crc32.Checksum(c.in, castagnoli); got != c.want {
			t.Errorf("crc32c(%x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

// sample is the golden file's events: the version record and two steps.
func sample(t *testing.T) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 1.5e9)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []Event{
		{WallTime: 1.5e9, Step: 8, Scalars: []Scalar{{"weights/loss", 2.5}, {"weights/lr", 3e-4}}},
		{WallTime: 1.5e9 + 1, Step: 300, Scalars: []Scalar{{"eval/val/mean@2", 0.125}}},
	} {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestFramingMatchesGolden holds the bytes of a small event file. Every
// TensorFlow event file begins with the 24-byte version record, whose
// framing (length 24 and its masked CRC a3 7f 4b 22) is the same in all
// of them: that prefix is checked against the constant, independently of
// the golden.
func TestFramingMatchesGolden(t *testing.T) {
	got := sample(t)
	prefix := []byte{0x18, 0, 0, 0, 0, 0, 0, 0, 0xa3, 0x7f, 0x4b, 0x22}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("file starts % x, want % x (TensorFlow's version-record header)", got[:12], prefix)
	}
	path := filepath.Join("testdata", "framing.golden")
	dump := hex.Dump(got)
	if *update {
		if err := os.WriteFile(path, []byte(dump), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./core/tfevent -run Golden -update writes it)", err)
	}
	if dump != string(want) {
		t.Errorf("event file bytes differ from %s:\n got:\n%s\nwant:\n%s", path, dump, want)
	}
}

func TestReaderReadsBackWhatWriterWrote(t *testing.T) {
	evs, err := ReadAll(bytes.NewReader(sample(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].FileVersion != FileVersion || evs[0].WallTime != 1.5e9 {
		t.Fatalf("events %+v, want the version record and two steps", evs)
	}
	if e := evs[1]; e.Step != 8 || len(e.Scalars) != 2 || e.Scalars[0] != (Scalar{"weights/loss", 2.5}) || e.Scalars[1] != (Scalar{"weights/lr", float32(3e-4)}) {
		t.Errorf("step event %+v", e)
	}
	if e := evs[2]; e.Step != 300 || e.WallTime != 1.5e9+1 || len(e.Scalars) != 1 || e.Scalars[0] != (Scalar{"eval/val/mean@2", 0.125}) {
		t.Errorf("second step event %+v", e)
	}
}

// TestReaderDetectsCorruptedCRC flips one bit in each part of a record —
// length, its checksum, data, the data's checksum — and wants ErrCorrupt
// naming the record each time.
func TestReaderDetectsCorruptedCRC(t *testing.T) {
	good := sample(t)
	first := 12 + 24 + 4 // the version record
	for _, off := range []int{first + 0, first + 9, first + 12 + 5, first + 12 + 20, len(good) - 1} {
		bad := bytes.Clone(good)
		bad[off] ^= 0x10
		_, err := ReadAll(bytes.NewReader(bad))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("bit flipped at byte %d: err %v, want ErrCorrupt", off, err)
			continue
		}
		if !strings.Contains(err.Error(), "record") {
			t.Errorf("bit flipped at byte %d: %v does not name the record", off, err)
		}
	}
	if _, err := ReadAll(bytes.NewReader(good[:len(good)-3])); !errors.Is(err, ErrCorrupt) {
		t.Errorf("file cut short: err %v, want ErrCorrupt", err)
	}
}

func TestMarshalRefusesNonFiniteValues(t *testing.T) {
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		if _, err := Marshal(Event{Step: 1, Scalars: []Scalar{{"x", v}}}); err == nil || !strings.Contains(err.Error(), "x") {
			t.Errorf("value %v: err %v, want one naming the tag", v, err)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadAll(bytes.NewReader(b)) // must not panic or allocate past MaxRecord
	})
}
