package metrics

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"whale/core/engine"
	"whale/core/tfevent"
)

func isUnknown(err error) bool { return errors.Is(err, engine.ErrUnknownEvent) }

// Formats are the values of whale metrics --format.
var Formats = []string{"jsonl", "csv", "tensorboard"}

// WriteJSONL writes one JSON object a point.
func WriteJSONL(w io.Writer, pts []Point) error {
	enc := json.NewEncoder(w)
	for _, p := range pts {
		if err := enc.Encode(p); err != nil {
			return fmt.Errorf("metrics: jsonl: %w", err)
		}
	}
	return nil
}

// CSVHeader is the header row of WriteCSV.
var CSVHeader = []string{"tag", "calls", "step", "iteration", "round", "phase", "seq", "value"}

// WriteCSV writes a header and one row a point; values are printed with
// the fewest digits that read back to the same float64.
func WriteCSV(w io.Writer, pts []Point) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	for _, p := range pts {
		cw.Write([]string{p.Tag, strconv.Itoa(p.Calls), strconv.Itoa(p.Step), strconv.Itoa(p.Iteration), strconv.Itoa(p.Round),
			p.Phase, strconv.FormatUint(p.Seq, 10), strconv.FormatFloat(p.Value, 'g', -1, 64)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("metrics: csv: %w", err)
	}
	return nil
}

// TensorBoard writes points as TensorBoard events: the points of one
// stored event become one tfevent.Event at step = model calls, its
// scalars as float32 simple values. Every record carries wallTime (the
// run's creation time: events store no clock, and a file made again from
// the same run is then the same bytes).
type TensorBoard struct {
	w        *tfevent.Writer
	wallTime float64
}

// NewTensorBoard writes the file-version record to w.
func NewTensorBoard(w io.Writer, wallTime float64) (*TensorBoard, error) {
	tw, err := tfevent.NewWriter(w, wallTime)
	if err != nil {
		return nil, err
	}
	return &TensorBoard{w: tw, wallTime: wallTime}, nil
}

// Write writes pts, one record per stored event they come from.
func (tb *TensorBoard) Write(pts []Point) error {
	for i := 0; i < len(pts); {
		j := i
		ev := tfevent.Event{WallTime: tb.wallTime, Step: int64(pts[i].Calls)}
		for ; j < len(pts) && pts[j].Seq == pts[i].Seq; j++ {
			ev.Scalars = append(ev.Scalars, tfevent.Scalar{Tag: pts[j].Tag, Value: float32(pts[j].Value)})
		}
		if err := tb.w.Write(ev); err != nil {
			return fmt.Errorf("metrics: tensorboard: event %d: %w", pts[i].Seq, err)
		}
		i = j
	}
	return nil
}

// ReadJSONL reads what WriteJSONL wrote, naming the bad line.
func ReadJSONL(r io.Reader) ([]Point, error) {
	dec := json.NewDecoder(r)
	var out []Point
	for line := 1; ; line++ {
		var p Point
		err := dec.Decode(&p)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("metrics: jsonl line %d: %w", line, err)
		}
		out = append(out, p)
	}
}

// ReadCSV reads what WriteCSV wrote, naming the bad line and column.
func ReadCSV(r io.Reader) ([]Point, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("metrics: csv: %w", err)
	}
	if len(rows) == 0 || fmt.Sprint(rows[0]) != fmt.Sprint(CSVHeader) {
		return nil, fmt.Errorf("metrics: csv line 1: header %v, want %v", rows[0:min(1, len(rows))], CSVHeader)
	}
	var out []Point
	for i, row := range rows[1:] {
		line := i + 2
		num := func(col int) int {
			if err != nil {
				return 0
			}
			var v int
			if v, err = strconv.Atoi(row[col]); err != nil {
				err = fmt.Errorf("metrics: csv line %d, column %s: %w", line, CSVHeader[col], err)
			}
			return v
		}
		p := Point{Tag: row[0], Calls: num(1), Step: num(2), Iteration: num(3), Round: num(4), Phase: row[5]}
		if err != nil {
			return nil, err
		}
		if p.Seq, err = strconv.ParseUint(row[6], 10, 64); err != nil {
			return nil, fmt.Errorf("metrics: csv line %d, column seq: %w", line, err)
		}
		if p.Value, err = strconv.ParseFloat(row[7], 64); err != nil {
			return nil, fmt.Errorf("metrics: csv line %d, column value: %w", line, err)
		}
		out = append(out, p)
	}
	return out, nil
}
