package searchqa

import (
	"encoding/json"
	"fmt"
	"strings"

	"whale/data"
)

// ImportQA reads a questions file and a corpus file, both jsonl, into a
// domain whose splits are dealt from opts.Seed. A question record has a
// string "question" and "answers", a non-empty list of strings (the first
// is the canonical answer, the rest aliases); an optional "id" (string or
// number) is kept in the task id. A corpus record has string fields "id"
// (unique), "title" and "text" (non-empty). Without opts.SkipBad the first
// bad line of either file is the error; with it bad lines are skipped and
// returned.
func ImportQA(questionsPath, corpusPath string, opts data.ImportOptions) (*Domain, []data.BadLine, error) {
	var docs []Doc
	ids := map[string]int{}
	bad, err := data.ScanLines(corpusPath, opts.SkipBad, func(line int, text []byte) *data.BadLine {
		doc, b := decodeDoc(text)
		if b != nil {
			return b
		}
		if prev, dup := ids[doc.ID]; dup {
			return &data.BadLine{Field: "id", Reason: fmt.Sprintf("duplicate id %q (first on line %d)", doc.ID, prev)}
		}
		ids[doc.ID] = line
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		return nil, bad, fmt.Errorf("searchqa: import corpus: %w", err)
	}
	if len(docs) == 0 {
		return nil, bad, fmt.Errorf("searchqa: import corpus: %s has no usable documents", corpusPath)
	}
	var tasks []data.Task
	taskIDs := map[string]int{}
	qbad, err := data.ScanLines(questionsPath, opts.SkipBad, func(line int, text []byte) *data.BadLine {
		t, b := decodeQuestion(text)
		if b != nil {
			return b
		}
		if t.ID == "" {
			t.ID = fmt.Sprintf("qa-line-%d", line)
		}
		if prev, dup := taskIDs[t.ID]; dup {
			return &data.BadLine{Field: "id", Reason: fmt.Sprintf("duplicate id (first on line %d)", prev)}
		}
		taskIDs[t.ID] = line
		tasks = append(tasks, t)
		return nil
	})
	bad = append(bad, qbad...)
	if err != nil {
		return nil, bad, fmt.Errorf("searchqa: import questions: %w", err)
	}
	if len(tasks) == 0 {
		return nil, bad, fmt.Errorf("searchqa: import questions: %s has no usable records", questionsPath)
	}
	splits, err := data.SplitTasks(tasks, opts.Seed, data.ImportSizes(opts.Sizes, len(tasks)))
	if err != nil {
		return nil, bad, fmt.Errorf("searchqa: import questions %s: %w", questionsPath, err)
	}
	return FromCorpus(docs, splits), bad, nil
}

func decodeDoc(text []byte) (Doc, *data.BadLine) {
	m, b := data.DecodeObject(text)
	if b != nil {
		return Doc{}, b
	}
	id, b := data.OptionalStringField(m, "id")
	if b != nil {
		return Doc{}, b
	}
	if strings.TrimSpace(id) == "" {
		return Doc{}, &data.BadLine{Field: "id", Reason: "missing or empty"}
	}
	title, b := data.OptionalStringField(m, "title")
	if b != nil {
		return Doc{}, b
	}
	if _, ok := m["title"]; !ok {
		return Doc{}, &data.BadLine{Field: "title", Reason: "missing"}
	}
	body, b := data.StringField(m, "text")
	if b != nil {
		return Doc{}, b
	}
	return Doc{ID: id, Title: title, Text: body}, nil
}

func decodeQuestion(text []byte) (data.Task, *data.BadLine) {
	m, b := data.DecodeObject(text)
	if b != nil {
		return data.Task{}, b
	}
	q, b := data.StringField(m, "question")
	if b != nil {
		return data.Task{}, b
	}
	raw, ok := m["answers"]
	if !ok {
		return data.Task{}, &data.BadLine{Field: "answers", Reason: "missing"}
	}
	var answers []string
	if err := json.Unmarshal(raw, &answers); err != nil {
		return data.Task{}, &data.BadLine{Field: "answers", Reason: "want a list of strings"}
	}
	var keep []string
	for i, a := range answers {
		if AnswerKey(a) == "" {
			return data.Task{}, &data.BadLine{Field: "answers", Reason: fmt.Sprintf("answer %d is empty after normalisation", i+1)}
		}
		keep = append(keep, a)
	}
	if len(keep) == 0 {
		return data.Task{}, &data.BadLine{Field: "answers", Reason: "empty list"}
	}
	id, b := data.OptionalStringField(m, "id")
	if b != nil {
		return data.Task{}, b
	}
	t := data.Task{Domain: Name, Problem: strings.TrimSpace(q), Answer: keep[0], Aliases: keep[1:]}
	if id != "" {
		t.ID = "qa-" + id
	}
	return t, nil
}
