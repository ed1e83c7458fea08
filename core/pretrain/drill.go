package pretrain

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"whale/core/model"
	"whale/core/tokenizer"
)

// Copy drills are synthetic sequences that can only be predicted by
// looking back: a string said again, a value looked up by its key. A
// byte-level model trained from scratch on the demonstrations alone did
// not learn to copy within the step budget (measured: the loss on the
// second copy of a random string equalled the first after 400 steps), and
// every domain needs copying — names out of passages, numbers out of
// word problems, moves out of the legal list. The drills use made-up
// words and numbers only, never task data.

// drillSequences returns n drills drawn from rng; a share random of them
// repeat strings of uniformly random letters, which nothing but copying
// predicts (the syllable words of the other drills are partly predictable
// from spelling alone, which slows learning to copy).
func drillSequences(rng *rand.Rand, mix Mix) []model.Sequence {
	n, random, answerOnly := mix.Drills, mix.DrillRandom, mix.DrillAnswerOnly
	tok := tokenizer.NewBytes()
	out := make([]model.Sequence, 0, n)
	for i := 0; i < n; i++ {
		if mix.DrillRaw && random > 0 && rng.Float64() < random {
			length := 100
			if mix.DrillRawVary {
				length = 8 + rng.IntN(153)
			}
			if mix.DrillRawWords > 0 && rng.Float64() < mix.DrillRawWords {
				out = append(out, rawCopyOf(tok.Encode(drillWords(rng, length))))
				continue
			}
			out = append(out, rawCopy(rng, length))
			continue
		}
		var prompt, answer string
		// No draw when random is 0 keeps older corpora reproducible.
		if random > 0 && rng.Float64() < random {
			prompt, answer = drillLetters(rng)
		} else {
			switch rng.IntN(3) {
			case 0:
				prompt, answer = drillRepeat(rng)
			case 1:
				if mix.DrillRelations {
					prompt, answer = drillRelation(rng)
				} else {
					prompt, answer = drillLookup(rng)
				}
			default:
				prompt, answer = drillNumbers(rng)
			}
		}
		ids, err := tokenizer.EncodeChat(tok, []tokenizer.Message{{Role: "user", Content: prompt}}, true)
		if err != nil {
			panic(err) // fixed roles: cannot fail
		}
		s := model.Sequence{Tokens: ids, Mask: make([]float32, len(ids))}
		// The repeated half inside the prompt is itself a copy target.
		for j := range s.Mask {
			if !answerOnly {
				s.Mask[j] = 0.25
			}
		}
		for _, t := range tok.Encode(answer) {
			s.Tokens = append(s.Tokens, t)
			s.Mask = append(s.Mask, 1)
		}
		s.Tokens = append(s.Tokens, tokenizer.BytesImEnd)
		s.Mask = append(s.Mask, 1)
		out = append(out, s)
	}
	return out
}

var drillSyllables = []string{"ba", "ko", "ri", "sha", "thu", "mei", "dra", "gou", "lin", "zo", "fe", "pra", "ni", "sto", "gre", "vau", "kai", "bro", "ul", "eth"}

func drillWord(rng *rand.Rand) string {
	var b strings.Builder
	for k := 2 + rng.IntN(2); k > 0; k-- {
		b.WriteString(drillSyllables[rng.IntN(len(drillSyllables))])
	}
	w := b.String()
	return strings.ToUpper(w[:1]) + w[1:]
}

func drillNumber(rng *rand.Rand) string {
	switch rng.IntN(3) {
	case 0:
		return fmt.Sprint(2 + rng.IntN(98))
	case 1:
		return fmt.Sprint(100 + rng.IntN(1900))
	default:
		return fmt.Sprintf("%d.%d", 1+rng.IntN(99), 1+rng.IntN(9))
	}
}

// drillRepeat: say a list of words and numbers back.
func drillRepeat(rng *rand.Rand) (string, string) {
	var xs []string
	for k := 3 + rng.IntN(8); k > 0; k-- {
		if rng.IntN(3) == 0 {
			xs = append(xs, drillNumber(rng))
		} else {
			xs = append(xs, drillWord(rng))
		}
	}
	s := strings.Join(xs, " ")
	return "Repeat exactly: " + s, "<answer>" + s + "</answer>"
}

// drillLookup: facts as sentences, then a question about one of them.
func drillLookup(rng *rand.Rand) (string, string) {
	n := 2 + rng.IntN(5)
	keys := make([]string, n)
	vals := make([]string, n)
	var b strings.Builder
	for i := range keys {
		keys[i] = drillWord(rng) + " " + drillWord(rng)
		if rng.IntN(2) == 0 {
			vals[i] = drillWord(rng)
			fmt.Fprintf(&b, "%s was born in %s. ", keys[i], vals[i])
		} else {
			vals[i] = fmt.Sprint(1800 + rng.IntN(220))
			fmt.Fprintf(&b, "%s (born %s) is a %s. ", keys[i], vals[i], strings.ToLower(drillWord(rng)))
		}
	}
	q := rng.IntN(n)
	if _, err := fmt.Sscan(vals[q], new(int)); err == nil {
		return b.String() + "\nQuestion: In what year was " + keys[q] + " born?", "<answer>" + vals[q] + "</answer>"
	}
	return b.String() + "\nQuestion: Where was " + keys[q] + " born?", "<answer>" + vals[q] + "</answer>"
}

// drillNumbers: copy the numbers of a statement into an expression.
func drillNumbers(rng *rand.Rand) (string, string) {
	a, c := drillNumber(rng), drillNumber(rng)
	ops := []string{"+", "-", "*", "/"}
	op := ops[rng.IntN(len(ops))]
	w := drillWord(rng)
	return fmt.Sprintf("%s has %s %ss and gets %s more. Write the calculation with %s.", w, a, strings.ToLower(drillWord(rng)), c, op),
		"<tool>calc: " + a + " " + op + " " + c + "</tool>"
}

// drillLetters: say back a long run of random letters. Long runs with no
// spaces are the strongest copy signal (measured: a fresh model of the
// base shape learns to copy 100-letter runs within about 125 steps).
func drillLetters(rng *rand.Rand) (string, string) {
	b := make([]byte, 60+rng.IntN(61))
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return "Repeat exactly: " + string(b), "<answer>" + string(b) + "</answer>"
}

// rawCopy is n random letters, a separator, the same letters again,
// with loss on the second copy only and no chat framing: the one form in
// which a fresh model of the base shape was measured to learn copying
// within about 125 steps (see Mix.DrillRawVary for why n should vary).
func rawCopy(rng *rand.Rand, n int) model.Sequence {
	letters := make([]int32, n)
	for i := range letters {
		letters[i] = int32('a' + rng.IntN(26))
	}
	return rawCopyOf(letters)
}

// rawCopyOf is the bare copy of body: end-of-text, body, a separator,
// body again, with loss on the second body only.
func rawCopyOf(body []int32) model.Sequence {
	n := len(body)
	s := model.Sequence{Tokens: make([]int32, 0, 2*n+2)}
	s.Tokens = append(s.Tokens, tokenizer.BytesEndOfText)
	s.Tokens = append(s.Tokens, body...)
	s.Tokens = append(s.Tokens, tokenizer.BytesImStart)
	s.Tokens = append(s.Tokens, body...)
	s.Mask = make([]float32, len(s.Tokens))
	for i := n + 2; i < len(s.Mask); i++ {
		s.Mask[i] = 1
	}
	return s
}

// drillWords is made-up capitalised words and numbers, about n bytes.
func drillWords(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if rng.IntN(4) == 0 {
			b.WriteString(drillNumber(rng))
		} else {
			b.WriteString(drillWord(rng))
		}
	}
	return b.String()
}

// relations are the kinds of fact a passage states and a question asks
// about: a sentence with the key and the value, and questions that name
// the relation in other words. Like every drill they use made-up words.
var relations = []struct {
	fact      string // %[1]s the key, %[2]s the value
	questions []string
	value     func(*rand.Rand) string
}{
	{"%[1]s works for %[2]s.", []string{"Who is the employer of %s?", "Which company does %s work for?"}, func(r *rand.Rand) string {
		return drillWord(r) + " " + pick(r, "Holdings", "Group", "Trading", "Systems")
	}},
	{"The mayor of %[1]s is %[2]s.", []string{"Who is the mayor of %s?"}, func(r *rand.Rand) string { return drillWord(r) + " " + drillWord(r) }},
	{"%[1]s is headquartered in %[2]s.", []string{"Where is %s headquartered?", "In which city is %s based?"}, drillWord},
	{"%[1]s was founded in 1980 by %[2]s.", []string{"Who founded %s?", "Who is the founder of %s?"}, func(r *rand.Rand) string { return drillWord(r) + " " + drillWord(r) }},
	{"%[1]s is a city in %[2]s.", []string{"In which country is %s?"}, drillWord},
	{"%[1]s was born in %[2]s.", []string{"Where was %s born?", "What is the birthplace of %s?"}, drillWord},
	{"%[1]s is a %[2]s company.", []string{"What industry is %s in?"}, func(r *rand.Rand) string {
		return pick(r, "railway", "brewing", "insurance", "pharmaceutical", "shipping", "mining", "textile")
	}},
	{"Its official language is %[2]s. It is called %[1]s.", []string{"Which language is official in %s?"}, drillWord},
	{"%[1]s (born %[2]s) is a painter.", []string{"In what year was %s born?"}, func(r *rand.Rand) string { return fmt.Sprint(1800 + r.IntN(220)) }},
}

// drillRelation: a short passage of facts of several relations about
// made-up names, then a question about one of them, answered with the
// value copied from the passage.
func drillRelation(rng *rand.Rand) (string, string) {
	n := 2 + rng.IntN(4)
	var b strings.Builder
	keys, vals, rels := make([]string, n), make([]string, n), make([]int, n)
	for i := range keys {
		rels[i] = rng.IntN(len(relations))
		keys[i] = drillWord(rng) + " " + drillWord(rng)
		vals[i] = relations[rels[i]].value(rng)
		fmt.Fprintf(&b, relations[rels[i]].fact+" ", keys[i], vals[i])
	}
	q := rng.IntN(n)
	rel := relations[rels[q]]
	return b.String() + "\nQuestion: " + fmt.Sprintf(pick(rng, rel.questions...), keys[q]), "<answer>" + vals[q] + "</answer>"
}
