package math

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"whale/data"
)

// annotationRE matches a GSM8K calculator annotation <<expr=result>>.
var annotationRE = regexp.MustCompile(`<<([^<>=]*)=([^<>]*)>>`)

// ImportGSM8K reads GSM8K jsonl (one object a line with string fields
// "question" and "answer", the answer ending in "#### N") into a domain
// whose splits are dealt from opts.Seed. The worked solution (the answer
// text before "####") is kept in Hidden with its calculator annotations as
// steps, which CalcAgreement checks. Without opts.SkipBad the first bad
// line is the error.
func ImportGSM8K(path string, opts data.ImportOptions) (*Domain, []data.BadLine, error) {
	var tasks []data.Task
	bad, err := data.ScanLines(path, opts.SkipBad, func(line int, text []byte) *data.BadLine {
		t, b := decodeGSM8K(text)
		if b != nil {
			return b
		}
		t.ID = fmt.Sprintf("gsm8k-%d", line)
		tasks = append(tasks, t)
		return nil
	})
	if err != nil {
		return nil, bad, fmt.Errorf("math: import gsm8k: %w", err)
	}
	if len(tasks) == 0 {
		return nil, bad, fmt.Errorf("math: import gsm8k: %s has no usable records", path)
	}
	splits, err := data.SplitTasks(tasks, opts.Seed, data.ImportSizes(opts.Sizes, len(tasks)))
	if err != nil {
		return nil, bad, fmt.Errorf("math: import gsm8k %s: %w", path, err)
	}
	return &Domain{splits: splits}, bad, nil
}

func decodeGSM8K(text []byte) (data.Task, *data.BadLine) {
	m, b := data.DecodeObject(text)
	if b != nil {
		return data.Task{}, b
	}
	q, b := data.StringField(m, "question")
	if b != nil {
		return data.Task{}, b
	}
	ans, b := data.StringField(m, "answer")
	if b != nil {
		return data.Task{}, b
	}
	i := strings.LastIndex(ans, "####")
	if i < 0 {
		return data.Task{}, &data.BadLine{Field: "answer", Reason: `does not end in "#### N"`}
	}
	final := strings.TrimSpace(ans[i+4:])
	v, err := ParseAnswer("#### " + final)
	if loc := numberRE.FindStringIndex(final); err != nil || loc == nil || loc[0] != 0 || loc[1] != len(final) {
		return data.Task{}, &data.BadLine{Field: "answer", Reason: fmt.Sprintf("final answer %q after #### is not a number", final)}
	}
	var steps []Step
	for _, mm := range annotationRE.FindAllStringSubmatch(ans[:i], -1) {
		steps = append(steps, Step{Expr: strings.TrimSpace(mm[1]), Value: strings.TrimSpace(mm[2])})
	}
	sj, _ := json.Marshal(steps)
	return data.Task{
		Domain:  Name,
		Problem: strings.TrimSpace(q),
		Answer:  Format(v.Value),
		Level:   min(len(steps), 8),
		Hidden:  map[string]string{HiddenSteps: string(sj), HiddenSolution: strings.TrimSpace(ans[:i]) + "\n#### " + final},
	}, nil
}

// Agreement counts how many calculator annotations of worked solutions
// calc reproduces.
type Agreement struct {
	Annotations int `json:"annotations"`
	Agree       int `json:"agree"`
	// Errors counts annotations whose expression calc rejects.
	Errors int `json:"errors"`
}

// Rate is Agree / Annotations (1 when there are none).
func (a Agreement) Rate() float64 {
	if a.Annotations == 0 {
		return 1
	}
	return float64(a.Agree) / float64(a.Annotations)
}

// CalcAgreement evaluates every step's expression with calc and compares
// it with the value written in the solution. A written value agrees when
// it equals calc's exactly or is calc's value rounded to the places it is
// written with (GSM8K writes 10/3 as 3.33, and sometimes 33.33 as 33).
func CalcAgreement(tasks []data.Task) Agreement {
	var a Agreement
	for _, t := range tasks {
		steps, err := Solution(t)
		if err != nil {
			continue
		}
		for _, s := range steps {
			a.Annotations++
			v, err := Eval(s.Expr)
			if err != nil {
				a.Errors++
				continue
			}
			w, err := ParseAnswer(s.Value)
			if err != nil {
				continue
			}
			if w.Value.Cmp(v) == 0 || RoundTo(v, w.Places).Cmp(w.Value) == 0 || Matches(w, v) {
				a.Agree++
			}
		}
	}
	return a
}
