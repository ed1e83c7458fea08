package searchqa

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"whale/data"
)

// Name is the domain's name.
const Name = "searchqa"

// DefaultMaxTurns is the base harness's turn budget: one search, then the
// answer.
const DefaultMaxTurns = 2

// Domain is a corpus with questions over it, dealt into splits.
type Domain struct {
	docs   []Doc
	index  *Index
	splits map[string][]data.Task
}

// New generates the world, its corpus and data.DefaultSizes questions from
// seed.
func New(seed uint64) (*Domain, error) { return NewSized(seed, data.DefaultSizes) }

// NewSized generates the world and sizes.Total() questions from seed and
// deals them into splits with data.SplitTasks.
func NewSized(seed uint64, sizes data.Sizes) (*Domain, error) {
	docs, tasks := generate(seed, sizes.Total())
	if len(tasks) < sizes.Total() {
		return nil, fmt.Errorf("searchqa: the world of seed %d has %d questions, fewer than the %d asked for", seed, len(tasks), sizes.Total())
	}
	splits, err := data.SplitTasks(tasks, seed, sizes)
	if err != nil {
		return nil, fmt.Errorf("searchqa: split generated tasks: %w", err)
	}
	return &Domain{docs: docs, index: NewIndex(docs), splits: splits}, nil
}

// FromCorpus makes a domain of a corpus and already dealt splits.
func FromCorpus(docs []Doc, splits map[string][]data.Task) *Domain {
	return &Domain{docs: docs, index: NewIndex(docs), splits: splits}
}

// Name is "searchqa".
func (d *Domain) Name() string { return Name }

// Corpus returns the documents the search tool searches.
func (d *Domain) Corpus() []Doc { return append([]Doc(nil), d.docs...) }

// Tasks returns a copy of a split.
func (d *Domain) Tasks(split string) ([]data.Task, error) {
	ts, ok := d.splits[split]
	if !ok {
		return nil, fmt.Errorf("searchqa: unknown split %q (want one of %s)", split, strings.Join(data.Splits, ", "))
	}
	return append([]data.Task(nil), ts...), nil
}

// Tools lists search.
func (d *Domain) Tools() []data.Tool { return []data.Tool{&Search{Index: d.index}} }

// DefaultMaxTurns is 2.
func (d *Domain) DefaultMaxTurns() int { return DefaultMaxTurns }

// GoldAction answers with the gold answer directly: the oracle knows it and
// needs no retrieval.
func (d *Domain) GoldAction(t data.Task, _ data.Observation) (data.Action, error) {
	if t.Answer == "" {
		return data.Action{}, fmt.Errorf("searchqa: task %s has no answer", t.ID)
	}
	return data.Action{Kind: data.ActAnswer, Text: t.Answer}, nil
}

// NewEpisode starts an attempt at t.
func (d *Domain) NewEpisode(t data.Task) data.Episode {
	return &episode{task: t, search: &Search{Index: d.index}}
}

// Search bounds.
const (
	DefaultK       = 3
	MaxK           = 10
	MaxQueryLen    = 512
	maxDocChars    = 600  // of one result's text
	maxResultChars = 4000 // of one call's whole output
)

// Search is the search tool: top-k BM25 over the corpus.
type Search struct{ Index *Index }

// Name is "search".
func (s *Search) Name() string { return "search" }

// Description is the one line a prompt shows.
func (s *Search) Description() string {
	return fmt.Sprintf(`search: find documents by keywords (BM25); args: the query as plain text, or {"query": "...", "k": N} for the top N (1-%d, default %d) documents`, MaxK, DefaultK)
}

// Call parses args, searches and renders the hits as "[n] Title\ntext"
// blocks.
func (s *Search) Call(args string) (string, error) {
	out, _, err := s.call(args)
	return out, err
}

func (s *Search) call(args string) (string, []string, error) {
	query, k, err := searchArgs(args)
	if err != nil {
		return "", nil, err
	}
	hits := s.Index.Search(query, k)
	if len(hits) == 0 {
		return "no documents match the query", nil, nil
	}
	var b strings.Builder
	var titles []string
	for i, h := range hits {
		d := s.Index.Doc(h.Doc)
		block := fmt.Sprintf("[%d] %s\n%s\n", i+1, d.Title, clip(d.Text, maxDocChars))
		if b.Len()+len(block) > maxResultChars {
			break
		}
		b.WriteString(block)
		titles = append(titles, d.Title)
	}
	return strings.TrimRight(b.String(), "\n"), titles, nil
}

func searchArgs(args string) (string, int, error) {
	s := strings.TrimSpace(args)
	if len(s) > MaxQueryLen+64 {
		return "", 0, fmt.Errorf("search: query longer than %d bytes", MaxQueryLen)
	}
	k := DefaultK
	if strings.HasPrefix(s, "{") {
		var a struct {
			Query *string         `json:"query"`
			K     json.RawMessage `json:"k"`
		}
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			return "", 0, fmt.Errorf("search: arguments: invalid JSON: %w", err)
		}
		if a.Query == nil {
			return "", 0, errors.New(`search: arguments: want {"query": "...", "k": N}`)
		}
		if len(a.K) > 0 && string(a.K) != "null" {
			if err := json.Unmarshal(a.K, &k); err != nil {
				return "", 0, fmt.Errorf("search: arguments: field k: want an integer 1-%d", MaxK)
			}
		}
		s = strings.TrimSpace(*a.Query)
	}
	if k < 1 || k > MaxK {
		return "", 0, fmt.Errorf("search: k = %d, want 1-%d", k, MaxK)
	}
	if s == "" {
		return "", 0, errors.New("search: empty query")
	}
	if len(s) > MaxQueryLen {
		return "", 0, fmt.Errorf("search: query longer than %d bytes", MaxQueryLen)
	}
	if len(Terms(s)) == 0 {
		return "", 0, errors.New("search: the query has no searchable words")
	}
	return s, k, nil
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// episode is one attempt at a question: searches, then one answer.
type episode struct {
	task     data.Task
	search   *Search
	turn     int
	queries  []string
	titles   []string
	last     string
	done     bool
	final    data.StepResult
	titleSet map[string]bool
}

// Observe shows the question and what was retrieved so far. Fields:
// "question" (string), "queries" ([]string, the searches made),
// "retrieved_titles" ([]string, titles of documents returned so far, each
// once, in order) and "last_result" (string, the last search's output).
func (e *episode) Observe() data.Observation {
	text := "Question: " + e.task.Problem
	if len(e.titles) > 0 {
		text += "\nRetrieved: " + strings.Join(e.titles, "; ")
	}
	return data.Observation{
		Text: text,
		Fields: map[string]any{
			"question":         e.task.Problem,
			"queries":          append([]string{}, e.queries...),
			"retrieved_titles": append([]string{}, e.titles...),
			"last_result":      e.last,
		},
		Turn: e.turn,
	}
}

func (e *episode) Step(a data.Action) data.StepResult {
	if e.done {
		return e.final
	}
	e.turn++
	switch a.Kind {
	case data.ActTool:
		if a.Tool != "search" {
			return data.StepResult{Obs: e.Observe(), Feedback: fmt.Sprintf("unknown tool %q; the tools are: search", a.Tool), Failure: data.FailInvalid}
		}
		out, titles, err := e.search.call(a.Args)
		if err != nil {
			return data.StepResult{Obs: e.Observe(), Feedback: err.Error(), Failure: data.FailToolError}
		}
		q, _, _ := searchArgs(a.Args)
		e.queries = append(e.queries, q)
		if e.titleSet == nil {
			e.titleSet = map[string]bool{}
		}
		for _, t := range titles {
			if !e.titleSet[t] {
				e.titleSet[t] = true
				e.titles = append(e.titles, t)
			}
		}
		e.last = out
		return data.StepResult{Obs: e.Observe(), ToolResult: out}
	case data.ActAnswer:
		if AnswerKey(a.Text) == "" {
			return data.StepResult{Obs: e.Observe(), Feedback: "the answer is empty", Failure: data.FailInvalid}
		}
		e.done = true
		e.final = data.StepResult{Obs: e.Observe(), Done: true, Feedback: "correct", Reward: 1}
		if !Correct(a.Text, e.task) {
			e.final.Feedback, e.final.Reward, e.final.Failure = "incorrect", 0, data.FailWrong
		}
		return e.final
	default:
		return data.StepResult{Obs: e.Observe(), Feedback: fmt.Sprintf("action %q is not accepted here; answer, or call search", a.Kind), Failure: data.FailInvalid}
	}
}

// answerPrefixes are stripped from an answer before comparison.
var answerPrefixes = []string{"final answer is ", "final answer ", "answer is ", "answer "}

// MaxAnswerLen bounds the answer text the verifier reads; a longer answer
// is wrong (an answer is a name, a year or a word, never a paragraph).
const MaxAnswerLen = 512

// AnswerKey normalises an answer for comparison: data.NormalizeText, then a
// leading "answer is" (left by "The answer is X.") is dropped.
func AnswerKey(s string) string {
	if len(s) > MaxAnswerLen {
		return ""
	}
	k := data.NormalizeText(s)
	for _, p := range answerPrefixes {
		if rest, ok := strings.CutPrefix(k, p); ok && rest != "" {
			return rest
		}
	}
	return k
}

// Correct reports whether answer matches the task's answer or an alias
// after normalisation (case, punctuation, articles, white space).
func Correct(answer string, t data.Task) bool {
	k := AnswerKey(answer)
	if k == "" || len(answer) > MaxAnswerLen {
		return false
	}
	for _, g := range append([]string{t.Answer}, t.Aliases...) {
		if AnswerKey(g) == k {
			return true
		}
	}
	return false
}
