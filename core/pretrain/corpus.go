package pretrain

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"whale/core/chat"
	"whale/core/model"
	"whale/core/tokenizer"
	"whale/data"
	"whale/data/domains"
	"whale/harnesses"
)

// Mix shapes the corpus, and through it the base model. The defaults are
// the calibration described in docs/BASE_MODEL.md.
type Mix struct {
	// Reps[domain] is how many demonstrations each train task gets, each
	// through its own harness variant.
	Reps map[string]int
	// H0Share[domain] is the share of demonstrations run through the
	// unmodified h0; the rest go through random variants of its
	// SEARCH_SPACE, so that h0 is one familiar layout among many.
	H0Share map[string]float64
	// MutateP is the chance that each knob of a far variant leaves h0's
	// value.
	MutateP float64
	// NearShare is the share of variants that are near h0 instead of far
	// from it: one to three knobs changed, each fragment's REQUIRES then
	// met, as the fragment proposer explores. Far variants (each knob
	// changed with MutateP) meet REQUIRES too. The shipped model before
	// the fragment library saw only far variants of a smaller space.
	NearShare float64 `json:",omitempty"`
	// MathSlip is the share of math demonstrations with an arithmetic slip;
	// MathCalc the share that hands the last operation to calc.
	MathSlip, MathCalc float64
	// Chess noise: a wrong legal move, a bare move without a tag, a first
	// tag corrected by a second.
	ChessWrong, ChessBare, ChessCorrect float64
	// PromptWeight is the loss weight of prompt tokens (completion tokens
	// weigh 1): a little language modelling of the prompts teaches the
	// model to read boards and passages at no extra compute.
	PromptWeight float32
	// MaxTokens drops demonstrations longer than this many tokens.
	MaxTokens int
	// Drills is the number of synthetic copy drills added (see drill.go).
	Drills int `json:",omitempty"`
	// DrillRandom is the share of drills that repeat random letters.
	DrillRandom float64 `json:",omitempty"`
	// DrillAnswerOnly puts no loss on a drill's prompt: the first copy
	// of random letters is unpredictable, and its loss only adds noise
	// while the model has yet to learn to copy.
	DrillAnswerOnly bool `json:",omitempty"`
	// DrillRaw renders the random-letter drills as bare copies (see
	// rawCopy) instead of chat turns.
	DrillRaw bool `json:",omitempty"`
	// DrillRawVary draws each bare copy's length from 8 to 160 letters.
	// A fixed length lets a model copy by relative position (measured:
	// after 100-letter drills the base shape copied a 100-letter run but
	// not a 79-letter one); varying it leaves only copying by content,
	// which is what passages, word problems and move lists need.
	DrillRawVary bool `json:",omitempty"`
	// DrillRawWords is the share of bare copies made of made-up words
	// and numbers instead of random letters. Letters are unpredictable, so
	// they teach copying alone; a model that copies letters still wrote
	// names from its own prior instead of copying them (measured), and
	// names are what passages hold.
	DrillRawWords float64 `json:",omitempty"`
	// DrillRelations replaces the lookup drills' two relations (born in,
	// born in year) with the kinds of fact passages state — employer,
	// mayor, headquarters, founder, country, industry, language — asked in
	// other words: a model that copies but only knew "born" answered
	// every passage question with a year (measured).
	DrillRelations bool `json:",omitempty"`
}

// DefaultMix is the mixture of the shipped base model.
func DefaultMix() Mix {
	return Mix{
		Reps:         map[string]int{"math": 1, "searchqa": 1, "chess": 1},
		H0Share:      map[string]float64{"math": 0.3, "searchqa": 0.1, "chess": 0.3},
		MutateP:      0.5,
		MathSlip:     0.1,
		MathCalc:     0.4,
		ChessWrong:   0.05,
		ChessBare:    0.05,
		ChessCorrect: 0.05,
		PromptWeight: 0.02,
		MaxTokens:    1536,
	}
}

// CorpusOptions say what to build a corpus from.
type CorpusOptions struct {
	// Seed drives variant choice and demonstration noise.
	Seed uint64
	// DataSeed opens the domains (their train splits only).
	DataSeed uint64
	// Domains to draw from; empty means all of domains.Names().
	Domains []string
	// TasksPerDomain, if positive, uses only the first N train tasks of
	// each domain (tests).
	TasksPerDomain int
	Mix            Mix
}

// DomainStats counts one domain's part of a corpus.
type DomainStats struct {
	Demos      int     `json:"demos"`
	Sequences  int     `json:"sequences"`
	Tokens     int     `json:"tokens"`
	Completion int     `json:"completion_tokens"`
	Dropped    int     `json:"dropped_too_long"`
	Reward     float64 `json:"demo_reward_mean"`
	Variants   int     `json:"variants"`
}

// Corpus is the training data: sequences with loss masks, in a fixed
// order, and a hash over their tokens and masks.
type Corpus struct {
	Seqs  []model.Sequence
	Hash  string
	Stats map[string]DomainStats
}

// variantGroup is the number of tasks run through one harness variant.
const variantGroup = 32

// BuildCorpus runs the demonstrator through h0 and variants of h0 on the
// train split of each domain and turns every policy call into a training
// sequence. Only the train split is ever read.
func BuildCorpus(ctx context.Context, opts CorpusOptions) (*Corpus, error) {
	names := opts.Domains
	if len(names) == 0 {
		names = domains.Names()
	}
	// The corpus is in the built-in byte model's tokens and template.
	tmpl, err := chat.NewTemplate(tokenizer.NewBytes())
	if err != nil {
		return nil, fmt.Errorf("pretrain: corpus: %w", err)
	}
	c := &Corpus{Stats: map[string]DomainStats{}}
	for di, name := range names {
		dom, err := domains.Open(name, opts.DataSeed)
		if err != nil {
			return nil, fmt.Errorf("pretrain: corpus: %w", err)
		}
		tasks, err := dom.Tasks(data.SplitTrain)
		if err != nil {
			return nil, fmt.Errorf("pretrain: corpus: %w", err)
		}
		if opts.TasksPerDomain > 0 && len(tasks) > opts.TasksPerDomain {
			tasks = tasks[:opts.TasksPerDomain]
		}
		h0, err := harnesses.Builtin(name, "h0")
		if err != nil {
			return nil, fmt.Errorf("pretrain: corpus: %w", err)
		}
		vars, err := newVariantSource(h0)
		if err != nil {
			return nil, fmt.Errorf("pretrain: corpus: %s h0: %w", name, err)
		}
		env := harnesses.EnvOf(dom)
		rng := rand.New(rand.NewPCG(opts.Seed, uint64(di)+0xc0))
		st := DomainStats{}
		variants := map[string]bool{}
		reps := max(opts.Mix.Reps[name], 1)
		for rep := 0; rep < reps; rep++ {
			for lo := 0; lo < len(tasks); lo += variantGroup {
				group := tasks[lo:min(lo+variantGroup, len(tasks))]
				src := h0
				if rng.Float64() >= opts.Mix.H0Share[name] {
					if src, err = vars.random(rng, opts.Mix); err != nil {
						return nil, fmt.Errorf("pretrain: corpus: %s: %w", name, err)
					}
				}
				h, err := harnesses.Load(fmt.Sprintf("%s/variant-%d-%d.star", name, rep, lo), src, env)
				if err != nil {
					return nil, fmt.Errorf("pretrain: corpus: %s variant: %w", name, err)
				}
				variants[h.Hash] = true
				demo := chat.Tokenize(newDemonstrator(dom, tmpl, opts.Seed, opts.Mix), tmpl)
				ts, err := harnesses.Run(ctx, h, dom, group, demo, harnesses.RunOptions{
					Seed: opts.Seed, K: 1, MaxNewTokens: 256, KeyPrefix: fmt.Sprintf("pretrain/%d/", rep)})
				if err != nil {
					return nil, fmt.Errorf("pretrain: corpus: %s: %w", name, err)
				}
				for _, tr := range ts {
					st.Demos++
					st.Reward += tr.Reward
					for _, s := range trajectorySequences(tr, opts.Mix.PromptWeight) {
						if len(s.Tokens) > opts.Mix.MaxTokens {
							st.Dropped++
							continue
						}
						st.Sequences++
						st.Tokens += len(s.Tokens)
						for _, w := range s.Mask {
							if w == 1 {
								st.Completion++
							}
						}
						c.Seqs = append(c.Seqs, s)
					}
				}
			}
		}
		if st.Demos > 0 {
			st.Reward /= float64(st.Demos)
		}
		st.Variants = len(variants)
		c.Stats[name] = st
	}
	if opts.Mix.Drills > 0 {
		ds := drillSequences(rand.New(rand.NewPCG(opts.Seed, 0xd1)), opts.Mix)
		st := DomainStats{Demos: len(ds), Sequences: len(ds)}
		for _, s := range ds {
			st.Tokens += len(s.Tokens)
			for _, w := range s.Mask {
				if w == 1 {
					st.Completion++
				}
			}
		}
		c.Seqs = append(c.Seqs, ds...)
		c.Stats["drills"] = st
	}
	c.Hash = hashSeqs(c.Seqs)
	return c, nil
}

// variantSource draws harness variants of h0.
type variantSource struct {
	vars  *harnesses.Variants
	space []harnesses.Dimension // sorted by knob
	frags []harnesses.Fragment
	h0    map[string]string
}

func newVariantSource(src string) (*variantSource, error) {
	vars, err := harnesses.NewVariants(src)
	if err != nil {
		return nil, err
	}
	frags, err := harnesses.FragmentsOf(src)
	if err != nil {
		return nil, err
	}
	space := vars.Space()
	sort.Slice(space, func(i, j int) bool { return space[i].Knob < space[j].Knob })
	h0 := map[string]string{}
	for _, d := range space {
		h0[d.Knob] = d.Current
	}
	return &variantSource{vars: vars, space: space, frags: frags, h0: h0}, nil
}

// random draws a near variant with probability mix.NearShare (one to
// three knobs changed), else a far one (each knob changed with
// mix.MutateP), whose chosen fragments' REQUIRES can all be met, and
// meets them. A draw whose fragments need conflicting settings of one
// knob is drawn again.
func (v *variantSource) random(rng *rand.Rand, mix Mix) (string, error) {
	near := rng.Float64() < mix.NearShare
	pick := func(r harnesses.Requirement, _ string) string { return r.Choices[rng.IntN(len(r.Choices))] }
	for try := 0; try < 100; try++ {
		point := map[string]string{}
		for k, c := range v.h0 {
			point[k] = c
		}
		fixed := map[string]bool{}
		change := func(d harnesses.Dimension) {
			var others []string
			for _, c := range d.Choices {
				if c != d.Current {
					others = append(others, c)
				}
			}
			if len(others) > 0 {
				point[d.Knob] = others[rng.IntN(len(others))]
				fixed[d.Knob] = true
			}
		}
		if near {
			for _, i := range rng.Perm(len(v.space))[:min(1+rng.IntN(3), len(v.space))] {
				change(v.space[i])
			}
		} else {
			for _, d := range v.space {
				if rng.Float64() < mix.MutateP {
					change(d)
				}
			}
		}
		if harnesses.SatisfyRequires(v.frags, point, fixed, pick) {
			return v.vars.Render(point)
		}
	}
	return "", fmt.Errorf("variant: no draw in 100 met its fragments' REQUIRES")
}

// trajectorySequences turns a rollout's policy calls into training
// sequences: a call whose prompt continues the previous call's prompt and
// completion is merged into it, so a multi-turn rollout trains as one
// sequence with every completion unmasked.
func trajectorySequences(tr harnesses.Trajectory, promptWeight float32) []model.Sequence {
	var out []model.Sequence
	var cur *model.Sequence
	for _, call := range tr.Calls {
		if !call.Trained() {
			continue
		}
		if cur != nil && hasPrefix(call.Prompt, cur.Tokens) {
			extra := call.Prompt[len(cur.Tokens):]
			cur.Tokens = append(cur.Tokens, extra...)
			for range extra {
				cur.Mask = append(cur.Mask, promptWeight)
			}
		} else {
			if cur != nil {
				out = append(out, *cur)
			}
			cur = &model.Sequence{Tokens: append([]int32(nil), call.Prompt...), Mask: make([]float32, len(call.Prompt))}
			for i := range cur.Mask {
				cur.Mask[i] = promptWeight
			}
		}
		cur.Tokens = append(cur.Tokens, call.Completion...)
		for range call.Completion {
			cur.Mask = append(cur.Mask, 1)
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

func hasPrefix(s, prefix []int32) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i, x := range prefix {
		if s[i] != x {
			return false
		}
	}
	return true
}

func hashSeqs(seqs []model.Sequence) string {
	h := sha256.New()
	var buf [4]byte
	for _, s := range seqs {
		binary.LittleEndian.PutUint32(buf[:], uint32(len(s.Tokens)))
		h.Write(buf[:])
		for i, t := range s.Tokens {
			binary.LittleEndian.PutUint32(buf[:], uint32(t))
			h.Write(buf[:])
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(s.Mask[i]))
			h.Write(buf[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
