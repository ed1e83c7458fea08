package eval

import (
	"math"
	"strings"
	"testing"
)

func TestSummarise(t *testing.T) {
	outs := []Outcome{
		{"a", 1, "", ""}, {"a", 0, "wrong", ""}, // 0.5, solved
		{"b", 0, "format", ""}, {"b", 0, "format", ""}, // 0, unsolved
		{"c", 1, "", ""}, {"c", 1, "", ""}, // 1, solved
	}
	r, err := Summarise(outs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tasks != 3 || r.K != 2 || r.Rollouts != 6 {
		t.Fatalf("counts %+v", r)
	}
	if math.Abs(r.MeanAtK-0.5) > 1e-12 || math.Abs(r.PassAtK-2.0/3) > 1e-12 {
		t.Fatalf("mean@k %v pass@k %v, want 0.5 and 2/3", r.MeanAtK, r.PassAtK)
	}
	if r.FailureKinds["format"] != 2 || r.FailureKinds["wrong"] != 1 {
		t.Fatalf("failure kinds %v", r.FailureKinds)
	}
	if !(r.CI95[0] <= r.MeanAtK && r.MeanAtK <= r.CI95[1]) || r.CI95[0] < 0 || r.CI95[1] > 1 {
		t.Fatalf("CI %v does not bracket %v inside [0,1]", r.CI95, r.MeanAtK)
	}
	r2, _ := Summarise(outs, 1)
	if r2.CI95 != r.CI95 {
		t.Fatal("bootstrap not reproducible from its seed")
	}
	if _, err := Summarise(append(outs, Outcome{"c", 1, "", ""}), 1); err == nil || !strings.Contains(err.Error(), "task c has 3") {
		t.Fatalf("uneven k: %v", err)
	}
	if _, err := Summarise([]Outcome{{"a", 2, "", ""}}, 1); err == nil {
		t.Fatal("reward 2 accepted")
	}
}

func TestBootstrapWidthShrinksWithTasks(t *testing.T) {
	// For a 0/1 mean of p the normal approximation gives a 95 % half width
	// of 1.96·sqrt(p(1−p)/n); the bootstrap must agree within 5 %, which
	// a wrong resample size (n/2 or 2n: ±41 %) or a 90 % interval (−16 %)
	// cannot. The error left is 2000 resamples' Monte Carlo noise (about
	// 2 % of the width) and the binomial's discreteness (2 % at n = 100).
	for _, c := range []struct {
		n int
		p float64
	}{{100, 0.5}, {400, 0.2}, {1600, 0.5}} {
		xs := make([]float64, c.n)
		for i := range int(c.p * float64(c.n)) {
			xs[i] = 1
		}
		ci := Bootstrap(xs, 3)
		half := (ci[1] - ci[0]) / 2
		want := 1.96 * math.Sqrt(c.p*(1-c.p)/float64(c.n))
		if math.Abs(half-want)/want > 0.05 {
			t.Errorf("n=%d p=%.1f: half width %.4f, normal approximation %.4f", c.n, c.p, half, want)
		}
		if mid := (ci[0] + ci[1]) / 2; math.Abs(mid-c.p) > 0.1*want {
			t.Errorf("n=%d p=%.1f: interval %v is not centred on the mean", c.n, c.p, ci)
		}
	}
}

func TestPassAtK(t *testing.T) {
	cases := []struct {
		n, c, k int
		want    float64
	}{
		{8, 0, 1, 0}, {8, 8, 8, 1}, {8, 1, 1, 0.125}, {8, 1, 8, 1},
		{10, 3, 2, 1 - (7.0*6)/(10*9)}, // 1 − C(7,2)/C(10,2)
	}
	for _, c := range cases {
		if got := PassAtK(c.n, c.c, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PassAtK(%d,%d,%d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
	if !math.IsNaN(PassAtK(2, 1, 3)) {
		t.Error("k > n must be NaN")
	}
}

func TestMajAtKVotesOverAnswers(t *testing.T) {
	outs := []Outcome{
		// a: the right answer twice, two different wrong ones: maj right.
		{TaskID: "a", Reward: 1, Answer: "answer:7"}, {TaskID: "a", Reward: 0, Answer: "answer:8", Failure: "wrong"},
		{TaskID: "a", Reward: 1, Answer: "answer:7"}, {TaskID: "a", Reward: 0, Answer: "answer:9", Failure: "wrong"},
		// b: one right, the same wrong answer twice, one empty: maj wrong.
		{TaskID: "b", Reward: 1, Answer: "answer:3"}, {TaskID: "b", Reward: 0, Answer: "answer:4", Failure: "wrong"},
		{TaskID: "b", Reward: 0, Answer: "answer:4", Failure: "wrong"}, {TaskID: "b", Reward: 0, Failure: "format"},
		// c: three empties and one right: the empties never win.
		{TaskID: "c", Reward: 0, Failure: "format"}, {TaskID: "c", Reward: 0, Failure: "format"},
		{TaskID: "c", Reward: 0, Failure: "format"}, {TaskID: "c", Reward: 1, Answer: "answer:5"},
		// d: a tie between right and wrong: the answer seen first wins.
		{TaskID: "d", Reward: 0, Answer: "answer:1", Failure: "wrong"}, {TaskID: "d", Reward: 1, Answer: "answer:2"},
		{TaskID: "d", Reward: 1, Answer: "answer:2"}, {TaskID: "d", Reward: 0, Answer: "answer:1", Failure: "wrong"},
	}
	r, err := Summarise(outs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.MajAtK != 0.5 || r.MeanAtK != (0.5+0.25+0.25+0.5)/4 || r.PassAtK != 1 {
		t.Fatalf("maj %v mean %v pass %v; want maj 0.5 (a, c right; b, d wrong)", r.MajAtK, r.MeanAtK, r.PassAtK)
	}
}
