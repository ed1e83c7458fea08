package searchqa

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/data"
	"whale/internal/longtests"
)

var small = data.Sizes{Train: 400, Val: 40, Audit: 20, Test: 60}

func sizes() data.Sizes {
	if longtests.Enabled() {
		return data.DefaultSizes
	}
	return small
}

func allTasks(t *testing.T, d data.Domain) []data.Task {
	var out []data.Task
	for _, sp := range data.Splits {
		ts, err := d.Tasks(sp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ts...)
	}
	return out
}

func TestGoldReplayEverySplit(t *testing.T) {
	d, err := NewSized(1, sizes())
	if err != nil {
		t.Fatal(err)
	}
	hops := map[int]int{}
	for _, sp := range data.Splits {
		ts, _ := d.Tasks(sp)
		if len(ts) == 0 {
			t.Fatalf("split %s is empty", sp)
		}
		for _, task := range ts {
			res, _, err := data.ReplayGold(d, task)
			if err != nil || res.Reward != 1 || !res.Done {
				t.Fatalf("gold replay of %s %q: %+v %v", task.ID, task.Problem, res, err)
			}
			hops[task.Level]++
		}
	}
	if hops[1] == 0 || hops[2] == 0 || hops[1]+hops[2] != sizes().Total() {
		t.Fatalf("hops %v", hops)
	}
}

func TestDefaultSizesFit(t *testing.T) {
	// The world must hold enough distinct facts for the default splits at
	// any seed; check a few.
	for _, seed := range []uint64{1, 2, 99} {
		if _, tasks := generate(seed, data.DefaultSizes.Total()); len(tasks) != data.DefaultSizes.Total() {
			t.Fatalf("seed %d: %d tasks", seed, len(tasks))
		}
	}
}

func splitHash(d data.Domain) string {
	var b strings.Builder
	for _, sp := range data.Splits {
		ts, _ := d.Tasks(sp)
		b.WriteString(sp + ":" + data.HashTasks(ts) + "\n")
	}
	return b.String()
}

func TestSplitsDeterministicDisjoint(t *testing.T) {
	a, _ := NewSized(7, small)
	b, _ := NewSized(7, small)
	c, _ := NewSized(8, small)
	if splitHash(a) != splitHash(b) {
		t.Fatal("one seed gave two different sets of splits")
	}
	if splitHash(a) == splitHash(c) {
		t.Fatal("two seeds gave the same splits")
	}
	ca, cb := a.Corpus(), b.Corpus()
	for i := range ca {
		if ca[i] != cb[i] {
			t.Fatalf("corpus differs at %d", i)
		}
	}
	seen := map[string]string{}
	for _, sp := range data.Splits {
		ts, _ := a.Tasks(sp)
		for _, task := range ts {
			if prev, ok := seen[task.Problem]; ok {
				t.Fatalf("question in %s and %s: %q", prev, sp, task.Problem)
			}
			seen[task.Problem] = sp
		}
	}
}

// TestAnswerable measures how often BM25 with the question as the query
// finds a gold document in the top 3. Measured at seed 1 over the default
// sizes: single-hop 100.0 % (2496 of 2496), two-hop first document 99.9 %
// (the second document, which the question does not name, 17.1 %: a
// two-hop question needs a second search) —
// asserted at 90 % and 85 % to leave room for other seeds and worlds.
func TestAnswerable(t *testing.T) {
	d, err := NewSized(1, sizes())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for i, doc := range d.docs {
		ids[doc.ID] = i
	}
	var n1, hit1, n2, hit2, second int
	for _, task := range allTasks(t, d) {
		gold := strings.Fields(task.Hidden[HiddenGoldDocs])
		found := false
		for _, h := range d.index.Search(task.Problem, 3) {
			if d.docs[h.Doc].ID == gold[0] {
				found = true
			}
			if len(gold) > 1 && d.docs[h.Doc].ID == gold[1] {
				second++
			}
		}
		// The answer is written in the last gold document.
		last := d.docs[ids[gold[len(gold)-1]]]
		if !strings.Contains(AnswerKey(last.Title+" "+last.Text), AnswerKey(task.Answer)) {
			t.Fatalf("task %s: answer %q not in its gold document %s", task.ID, task.Answer, last.ID)
		}
		if task.Level == 1 {
			n1++
			if found {
				hit1++
			}
		} else {
			n2++
			if found {
				hit2++
			}
		}
	}
	r1, r2 := float64(hit1)/float64(n1), float64(hit2)/float64(n2)
	t.Logf("top-3 recall of the first gold document: single-hop %.3f (%d), two-hop %.3f (%d); two-hop second document %.3f",
		r1, n1, r2, n2, float64(second)/float64(n2))
	if r1 < 0.90 || r2 < 0.85 {
		t.Fatalf("BM25 top-3 recall single-hop %.3f, two-hop %.3f; want ≥ 0.90 and ≥ 0.85", r1, r2)
	}
}

func TestEpisode(t *testing.T) {
	d, _ := NewSized(3, data.Sizes{Train: 10, Val: 1, Audit: 1, Test: 1})
	ts, _ := d.Tasks(data.SplitTrain)
	task := ts[0]
	ep := d.NewEpisode(task)
	obs := ep.Observe()
	if obs.Fields["question"] != task.Problem || strings.Contains(obs.Text, task.Hidden[HiddenGoldDocs]) {
		t.Fatalf("observation %+v", obs)
	}
	steps := []struct {
		a    data.Action
		fail data.FailureKind
	}{
		{data.Action{Kind: data.ActTool, Tool: "search", Args: task.Problem}, data.FailNone},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: `{"query": "` + task.Problem + `", "k": 5}`}, data.FailNone},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: `{"query": "x", "k": 11}`}, data.FailToolError},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: `{"query": "x", "k": "three"}`}, data.FailToolError},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: `{"q": "x"}`}, data.FailToolError},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: "   "}, data.FailToolError},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: "the of a"}, data.FailToolError},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: strings.Repeat("x ", 300)}, data.FailToolError},
		{data.Action{Kind: data.ActTool, Tool: "calc", Args: "1+1"}, data.FailInvalid},
		{data.Action{Kind: data.ActMove, Text: "e2e4"}, data.FailInvalid},
		{data.Action{Kind: data.ActAnswer, Text: " ...!? "}, data.FailInvalid},
	}
	for i, s := range steps {
		res := ep.Step(s.a)
		if res.Done || res.Reward != 0 || res.Failure != s.fail {
			t.Fatalf("step %d %+v: %+v", i, s.a, res)
		}
		if s.fail == data.FailNone && (res.ToolResult == "" || len(res.ToolResult) > maxResultChars) {
			t.Fatalf("step %d: tool result %q", i, res.ToolResult)
		}
	}
	obs = ep.Observe()
	if q := obs.Fields["queries"].([]string); len(q) != 2 {
		t.Fatalf("queries %q", q)
	}
	titles := obs.Fields["retrieved_titles"].([]string)
	if len(titles) < 3 || len(titles) > 5 {
		t.Fatalf("retrieved titles %q", titles)
	}
	res := ep.Step(data.Action{Kind: data.ActAnswer, Text: task.Answer + "x"})
	if !res.Done || res.Reward != 0 || res.Failure != data.FailWrong {
		t.Fatalf("wrong answer: %+v", res)
	}
	if again := ep.Step(data.Action{Kind: data.ActAnswer, Text: task.Answer}); again.Reward != 0 {
		t.Fatalf("step after done: %+v", again)
	}
}

func TestCorrect(t *testing.T) {
	task := data.Task{Answer: "Thoas River", Aliases: []string{"Thoas"}}
	for _, s := range []string{"Thoas River", "thoas river", "The Thoas River.", "the  thoas   river!", "Thoas", "The answer is Thoas River.", "Answer: the Thoas River"} {
		if !Correct(s, task) {
			t.Errorf("Correct(%q) = false", s)
		}
	}
	for _, s := range []string{"Thaos River", "Thoas Sea", "River", "Thoas River Delta", "", "the", "Thoas River or Velm River"} {
		if Correct(s, task) {
			t.Errorf("Correct(%q) = true", s)
		}
	}
	year := data.Task{Answer: "1962"}
	if !Correct("1962.", year) || Correct("1963", year) || Correct("19620", year) {
		t.Error("year matching")
	}
	if Correct(strings.Repeat("Thoas ", 200), task) {
		t.Error("an over-long answer matched")
	}
}

func TestSearchDeterministicTies(t *testing.T) {
	docs := []Doc{{ID: "a", Title: "x", Text: "apple"}, {ID: "b", Title: "x", Text: "apple"}, {ID: "c", Title: "y", Text: "pear"}}
	ix := NewIndex(docs)
	for i := 0; i < 20; i++ {
		h := ix.Search("apple", 3)
		if len(h) != 2 || h[0].Doc != 0 || h[1].Doc != 1 {
			t.Fatalf("hits %+v", h)
		}
	}
	if h := ix.Search("pear apple", 1); len(h) != 1 {
		t.Fatalf("k not applied: %+v", h)
	}
}

func TestImportQA(t *testing.T) {
	d, bad, err := ImportQA("testdata/questions.jsonl", "testdata/corpus.jsonl", data.ImportOptions{Seed: 2})
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	tasks := allTasks(t, d)
	if len(tasks) != 3 || len(d.Corpus()) != 4 {
		t.Fatalf("%d tasks, %d docs", len(tasks), len(d.Corpus()))
	}
	for _, task := range tasks {
		if res, _, err := data.ReplayGold(d, task); err != nil || res.Reward != 1 {
			t.Fatalf("gold replay %s: %+v %v", task.ID, res, err)
		}
		if task.Problem == "Who is the mayor of Velmora?" {
			ep := d.NewEpisode(task)
			res := ep.Step(data.Action{Kind: data.ActTool, Tool: "search", Args: task.Problem})
			if !strings.HasPrefix(res.ToolResult, "[1] Velmora\n") {
				t.Errorf("search result %q", res.ToolResult)
			}
			if r := ep.Step(data.Action{Kind: data.ActAnswer, Text: "dr ada kern"}); r.Reward != 1 {
				t.Errorf("alias not accepted: %+v", r)
			}
		}
	}
}

func TestImportQABadLines(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.jsonl")
	qs := filepath.Join(dir, "q.jsonl")
	goodDoc := `{"id": "1", "title": "T", "text": "some text"}`
	goodQ := `{"question": "q?", "answers": ["a"]}`
	cases := []struct {
		docLine, qLine, file, field string
	}{
		{`{"id": "1", "title": "T", "text": ""}`, "", corpus, "text"},
		{`{"title": "T", "text": "x"}`, "", corpus, "id"},
		{`{"id": "2", "text": "x"}`, "", corpus, "title"},
		{`{"id": "1", "title": "T", "text": "dup"}`, "", corpus, "id"},
		{`not json`, "", corpus, ""},
		{"", `{"question": "q2?", "answers": []}`, qs, "answers"},
		{"", `{"question": "q2?", "answers": "a"}`, qs, "answers"},
		{"", `{"question": "q2?", "answers": ["?!"]}`, qs, "answers"},
		{"", `{"question": 3, "answers": ["a"]}`, qs, "question"},
		{"", `{"answers": ["a"]}`, qs, "question"},
		{"", `{"id": [1], "question": "q2?", "answers": ["a"]}`, qs, "id"},
	}
	for _, c := range cases {
		docs, questions := goodDoc+"\n", goodQ+"\n"
		if c.docLine != "" {
			docs += c.docLine + "\n"
		} else {
			docs += `{"id": "2", "title": "U", "text": "more"}` + "\n"
		}
		if c.qLine != "" {
			questions += c.qLine + "\n"
		} else {
			questions += `{"question": "q3?", "answers": ["b"]}` + "\n"
		}
		os.WriteFile(corpus, []byte(docs), 0o644)
		os.WriteFile(qs, []byte(questions), 0o644)
		_, _, err := ImportQA(qs, corpus, data.ImportOptions{})
		want := c.file + ":2"
		if c.field != "" {
			want += ": field " + c.field
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s%s: error %v, want %q", c.docLine, c.qLine, err, want)
		}
		_, bad, err := ImportQA(qs, corpus, data.ImportOptions{SkipBad: true})
		if err != nil || len(bad) != 1 || bad[0].File != c.file || bad[0].Line != 2 || bad[0].Field != c.field {
			t.Errorf("skip-bad %s%s: %v %+v", c.docLine, c.qLine, err, bad)
		}
	}
}

func FuzzImportQA(f *testing.F) {
	f.Add([]byte(`{"question": "q?", "answers": ["a", "b"]}`), []byte(`{"id": "1", "title": "T", "text": "x"}`))
	f.Add([]byte(`{"question": "", "answers": [1]}`), []byte(`{"id": 1, "title": null, "text": "x"}`))
	f.Fuzz(func(t *testing.T, q, c []byte) {
		dir := t.TempDir()
		qp, cp := filepath.Join(dir, "q"), filepath.Join(dir, "c")
		os.WriteFile(qp, q, 0o644)
		os.WriteFile(cp, c, 0o644)
		d, bad, err := ImportQA(qp, cp, data.ImportOptions{SkipBad: true})
		for _, b := range bad {
			if b.Line < 1 || (b.File != qp && b.File != cp) {
				t.Fatalf("bad line without location %+v", b)
			}
		}
		if err != nil {
			return
		}
		for _, task := range allTasks(t, d) {
			if res, _, err := data.ReplayGold(d, task); err != nil || res.Reward != 1 {
				t.Fatalf("task %+v: %+v %v", task, res, err)
			}
			d.NewEpisode(task).Step(data.Action{Kind: data.ActTool, Tool: "search", Args: task.Problem})
		}
	})
}

func FuzzAnswerKey(f *testing.F) {
	for _, s := range []string{"The Thoas River.", "1,234", "Answer: an apple", "Jean-Luc", "\xff\xfe", "answer is"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := AnswerKey(s)
		if AnswerKey(k) != k && !strings.HasPrefix(k, "answer") && !strings.HasPrefix(k, "final") {
			t.Fatalf("AnswerKey not idempotent on %q: %q then %q", s, k, AnswerKey(k))
		}
		if k != "" && !Correct(s, data.Task{Answer: s}) {
			t.Fatalf("%q does not match itself", s)
		}
	})
}

func BenchmarkSearch(b *testing.B) {
	d, err := NewSized(1, small)
	if err != nil {
		b.Fatal(err)
	}
	ts, _ := d.Tasks(data.SplitTrain)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		d.index.Search(ts[i%len(ts)].Problem, 3)
		i++
	}
}
