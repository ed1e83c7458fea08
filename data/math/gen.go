package math

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"

	"whale/data"
)

// Step is one step of a worked solution: a single arithmetic operation
// written as an expression over the numbers of the problem and of earlier
// steps, its value (as Format writes it) and what the value means.
type Step struct {
	Expr  string `json:"expr"`
	Value string `json:"value"`
	Text  string `json:"text,omitempty"`
}

// Keys of Task.Hidden set by this package.
const (
	// HiddenSteps holds the worked solution's steps as a JSON array of Step.
	HiddenSteps = "steps"
	// HiddenSolution holds the worked solution as text, ending in "#### N".
	HiddenSolution = "solution"
)

// Solution returns the worked gold solution of a math task.
func Solution(t data.Task) ([]Step, error) {
	raw, ok := t.Hidden[HiddenSteps]
	if !ok {
		return nil, fmt.Errorf("math: task %s has no worked solution", t.ID)
	}
	var steps []Step
	if err := json.Unmarshal([]byte(raw), &steps); err != nil {
		return nil, fmt.Errorf("math: task %s: decode steps: %w", t.ID, err)
	}
	return steps, nil
}

// renderSolution writes steps in the GSM8K style: one line per step with
// a calculator annotation, then "#### answer".
func renderSolution(steps []Step, answer string) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "%s: %s = <<%s=%s>>%s\n", capitalize(s.Text), s.Expr, s.Expr, s.Value, s.Value)
	}
	b.WriteString("#### " + answer)
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Generate returns n distinct word problems (distinct problem text)
// generated from seed, with levels 1 to 5 (the number of operations) in
// about equal shares. The same seed always gives the same tasks. It fails
// only when n is beyond what the templates can make distinct.
func Generate(seed uint64, n int) ([]data.Task, error) {
	r := rand.New(rand.NewPCG(seed, 0x6d617468)) // "math"
	seen := make(map[string]bool, n)
	tasks := make([]data.Task, 0, n)
	for attempts := 0; len(tasks) < n; attempts++ {
		if attempts > 50*n+1000 {
			return nil, fmt.Errorf("math: generate: found only %d distinct problems of the %d asked for", len(tasks), n)
		}
		level := 1 + len(tasks)%5
		t, ok := generateOne(r, level)
		if !ok || seen[t.Problem] {
			continue
		}
		seen[t.Problem] = true
		t.ID = fmt.Sprintf("math-%d-%05d", seed, len(tasks))
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// family writes one problem with exactly level operations into b and
// returns its text, or false when the numbers it drew do not work out
// (a remainder, a negative count); the caller then draws again.
type family func(b *builder, level int) (string, bool)

var families = []family{inventory, shopping, wages, travel, recipe, garden, ages, venue, scores}

func generateOne(r *rand.Rand, level int) (data.Task, bool) {
	b := &builder{r: r}
	f := families[r.IntN(len(families))]
	text, ok := f(b, level)
	if !ok || len(b.steps) != level {
		return data.Task{}, false
	}
	final, _ := new(big.Rat).SetString(b.steps[len(b.steps)-1].Value)
	for _, s := range b.steps {
		v, _ := new(big.Rat).SetString(s.Value)
		if v.Sign() <= 0 || v.Cmp(big.NewRat(1_000_000, 1)) > 0 {
			return data.Task{}, false
		}
		if p, exact := decimalPlaces(v.Denom()); !exact || p > 4 {
			return data.Task{}, false
		}
	}
	if p, _ := decimalPlaces(final.Denom()); p > 2 {
		return data.Task{}, false
	}
	answer := Format(final)
	steps, _ := json.Marshal(b.steps)
	return data.Task{
		Domain:  "math",
		Problem: text,
		Answer:  answer,
		Level:   level,
		Hidden: map[string]string{
			HiddenSteps:    string(steps),
			HiddenSolution: renderSolution(b.steps, answer),
		},
	}, true
}

type builder struct {
	r     *rand.Rand
	steps []Step
}

// op evaluates one operation with calc itself, so that every gold step
// agrees with the tool a solver has.
func (b *builder) op(text, expr string) *big.Rat {
	v, err := Eval(expr)
	if err != nil {
		panic(fmt.Sprintf("math: generated step %q: %v", expr, err))
	}
	b.steps = append(b.steps, Step{Expr: expr, Value: Format(v), Text: text})
	return v
}

func (b *builder) pick(xs []string) string { return xs[b.r.IntN(len(xs))] }

// between draws an integer in [lo, hi].
func (b *builder) between(lo, hi int) int { return lo + b.r.IntN(hi-lo+1) }

// money draws a price in [lo, hi] dollars in steps of 25 cents.
func (b *builder) money(lo, hi int) *big.Rat {
	quarters := b.between(lo*4, hi*4)
	return big.NewRat(int64(quarters), 4)
}

func f(v *big.Rat) string { return Format(v) }

// dollars writes a money amount as "$2.50" or "$3".
func dollars(v *big.Rat) string {
	if v.IsInt() {
		return "$" + v.Num().String()
	}
	return "$" + v.FloatString(2)
}

type person struct{ name, subj, poss string }

var people = []person{
	{"Mia", "she", "her"}, {"Leo", "he", "his"}, {"Ava", "she", "her"}, {"Noah", "he", "his"},
	{"Zara", "she", "her"}, {"Omar", "he", "his"}, {"Priya", "she", "her"}, {"Kenji", "he", "his"},
	{"Lucia", "she", "her"}, {"Mateo", "he", "his"}, {"Amara", "she", "her"}, {"Elias", "he", "his"},
	{"Hana", "she", "her"}, {"Tariq", "he", "his"}, {"Ingrid", "she", "her"}, {"Sam", "he", "his"},
	{"Nadia", "she", "her"}, {"Diego", "he", "his"}, {"Chloe", "she", "her"}, {"Ravi", "he", "his"},
	{"Fatima", "she", "her"}, {"Jonas", "he", "his"}, {"Grace", "she", "her"}, {"Kwame", "he", "his"},
	{"Rosa", "she", "her"}, {"Felix", "he", "his"}, {"Yuki", "she", "her"}, {"Arjun", "he", "his"},
	{"Elena", "she", "her"}, {"Marcus", "he", "his"}, {"Leila", "she", "her"}, {"Tomas", "he", "his"},
}

func (b *builder) people2() (person, person) {
	i := b.r.IntN(len(people))
	j := (i + 1 + b.r.IntN(len(people)-1)) % len(people)
	return people[i], people[j]
}

type thing struct{ one, many string }

var things = []thing{
	{"marble", "marbles"}, {"sticker", "stickers"}, {"apple", "apples"}, {"book", "books"},
	{"pencil", "pencils"}, {"trading card", "trading cards"}, {"seashell", "seashells"},
	{"stamp", "stamps"}, {"cookie", "cookies"}, {"egg", "eggs"}, {"bead", "beads"},
	{"toy car", "toy cars"}, {"postcard", "postcards"}, {"crayon", "crayons"}, {"balloon", "balloons"},
	{"strawberry", "strawberries"}, {"comic book", "comic books"}, {"button", "buttons"},
}

var containers = []string{"boxes", "bags", "jars", "baskets", "piles", "bins"}

func inventory(b *builder, level int) (string, bool) {
	p, q := b.people2()
	it := things[b.r.IntN(len(things))]
	cur := big.NewRat(int64(b.between(6, 80)), 1)
	var s []string
	s = append(s, fmt.Sprintf("%s has %s %s.", p.name, f(cur), it.many))
	for i := 0; i < level; i++ {
		then := ""
		if i > 0 {
			then = b.pick([]string{"Then ", "After that, ", "Later, ", "Next, "})
		}
		switch b.r.IntN(5) {
		case 0, 1: // add
			k := b.between(2, 60)
			verbs := [][2]string{{"buys", "buying"}, {"finds", "finding"}, {"is given", "getting"}, {"collects", "collecting"}, {"wins", "winning"}}
			verb := verbs[b.r.IntN(len(verbs))]
			s = append(s, fmt.Sprintf("%s%s %s %d more %s.", then, p.subj, verb[0], k, it.many))
			cur = b.op(fmt.Sprintf("%s after %s %d more", it.many, verb[1], k), fmt.Sprintf("%s + %d", f(cur), k))
		case 2: // subtract
			c, _ := cur.Float64()
			if c < 3 {
				return "", false
			}
			k := b.between(1, int(c)-1)
			verb := b.pick([]string{"gives %d %s to %s", "sells %d %s to %s", "shares %d %s with %s", "lends %d %s to %s"})
			s = append(s, fmt.Sprintf("%s%s "+verb+".", then, p.subj, k, it.many, q.name))
			cur = b.op(fmt.Sprintf("%s left after giving away %d", it.many, k), fmt.Sprintf("%s - %d", f(cur), k))
		case 3: // multiply
			k := b.between(2, 4)
			word := map[int]string{2: "doubles", 3: "triples", 4: "quadruples"}[k]
			s = append(s, fmt.Sprintf("%s%s %s %s collection.", then, p.subj, word, p.poss))
			cur = b.op(fmt.Sprintf("%s after the collection %s", it.many, word), fmt.Sprintf("%s * %d", f(cur), k))
		case 4: // divide
			var ks []int
			for k := 2; k <= 8; k++ {
				if new(big.Rat).Quo(cur, big.NewRat(int64(k), 1)).IsInt() {
					ks = append(ks, k)
				}
			}
			if len(ks) == 0 {
				return "", false
			}
			k := ks[b.r.IntN(len(ks))]
			box := b.pick(containers)
			s = append(s, fmt.Sprintf("%s%s puts the %s into %d %s with the same number in each and keeps only one of the %s.", then, p.subj, it.many, k, box, box))
			cur = b.op(fmt.Sprintf("%s in one of %d %s", it.many, k, box), fmt.Sprintf("%s / %d", f(cur), k))
		}
	}
	s = append(s, b.pick([]string{
		fmt.Sprintf("How many %s does %s have now?", it.many, p.name),
		fmt.Sprintf("How many %s does %s end up with?", it.many, p.name),
		fmt.Sprintf("How many %s does %s have in the end?", it.many, p.name),
	}))
	return sentences(s), true
}

// sentences joins sentences, capitalising each.
func sentences(s []string) string {
	for i := range s {
		s[i] = capitalize(s[i])
	}
	return strings.Join(s, " ")
}

type good struct {
	one, many string
	lo, hi    int // price range in dollars
}

var goods = []good{
	{"notebook", "notebooks", 1, 6}, {"pen", "pens", 1, 3}, {"sandwich", "sandwiches", 3, 9},
	{"T-shirt", "T-shirts", 6, 20}, {"movie ticket", "movie tickets", 5, 14}, {"plant", "plants", 2, 15},
	{"bag of rice", "bags of rice", 2, 12}, {"paintbrush", "paintbrushes", 1, 7}, {"mug", "mugs", 3, 11},
	{"puzzle", "puzzles", 4, 18}, {"loaf of bread", "loaves of bread", 2, 6}, {"bottle of juice", "bottles of juice", 1, 5},
}

func shopping(b *builder, level int) (string, bool) {
	// Operation counts: n items cost 2n-1 operations, a discount 2, change 1.
	type plan struct{ items, discount, change int }
	var plans []plan
	for n := 1; n <= 3; n++ {
		for d := 0; d <= 1; d++ {
			for c := 0; c <= 1; c++ {
				if 2*n-1+2*d+c == level {
					plans = append(plans, plan{n, d, c})
				}
			}
		}
	}
	if len(plans) == 0 {
		return "", false
	}
	pl := plans[b.r.IntN(len(plans))]
	p, _ := b.people2()
	shop := b.pick([]string{"a market", "a shop", "the school fair", "a bookstore", "a corner store", "an online store"})
	idx := b.r.Perm(len(goods))[:pl.items]
	var buys []string
	var total *big.Rat
	for i, gi := range idx {
		g := goods[gi]
		qty := b.between(2, 9)
		price := b.money(g.lo, g.hi)
		buys = append(buys, fmt.Sprintf("%d %s at %s each", qty, g.many, dollars(price)))
		cost := b.op(fmt.Sprintf("cost of the %s", g.many), fmt.Sprintf("%d * %s", qty, f(price)))
		if i == 0 {
			total = cost
		} else {
			total = b.op("total so far", fmt.Sprintf("%s + %s", f(total), f(cost)))
		}
	}
	s := []string{fmt.Sprintf("At %s, %s buys %s.", shop, p.name, joinAnd(buys))}
	ask := fmt.Sprintf("How much does %s spend?", p.name)
	if pl.discount == 1 {
		pct := []int{10, 20, 25, 50}[b.r.IntN(4)]
		s = append(s, fmt.Sprintf("The store takes %d%% off the total price.", pct))
		off := b.op("the discount", fmt.Sprintf("%s * %s", f(total), f(big.NewRat(int64(pct), 100))))
		total = b.op("price after the discount", fmt.Sprintf("%s - %s", f(total), f(off)))
		ask = fmt.Sprintf("How much does %s pay after the discount?", p.name)
	}
	if pl.change == 1 {
		t, _ := total.Float64()
		var bill int
		for _, c := range []int{5, 10, 20, 50, 100, 200, 500} {
			if float64(c) > t {
				bill = c
				break
			}
		}
		if bill == 0 {
			return "", false
		}
		s = append(s, fmt.Sprintf("%s pays with a %s bill.", capitalize(p.subj), dollars(big.NewRat(int64(bill), 1))))
		b.op("change", fmt.Sprintf("%d - %s", bill, f(total)))
		ask = fmt.Sprintf("How much change does %s get, in dollars?", p.name)
	}
	s = append(s, ask)
	return sentences(s), true
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 1:
		return xs[0]
	case 2:
		return xs[0] + " and " + xs[1]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

var jobs = []string{"at a bakery", "as a lifeguard", "at a library", "as a tutor", "at a garden center", "as a dog walker", "at a cafe", "at a bike shop"}

func wages(b *builder, level int) (string, bool) {
	p, _ := b.people2()
	rate := b.money(8, 22)
	if b.r.IntN(2) == 0 {
		rate = big.NewRat(int64(b.between(8, 25)), 1)
	}
	hours := b.between(2, 8)
	s := []string{fmt.Sprintf("%s works %s and earns %s per hour.", p.name, b.pick(jobs), dollars(rate)),
		fmt.Sprintf("%s works %d hours a day.", capitalize(p.subj), hours)}
	v := b.op("pay for one day", fmt.Sprintf("%s * %d", f(rate), hours))
	ask := fmt.Sprintf("How much does %s earn in one day?", p.name)
	if level >= 2 {
		days := b.between(2, 6)
		s = append(s, fmt.Sprintf("%s works %d days each week.", capitalize(p.subj), days))
		v = b.op("pay for one week", fmt.Sprintf("%s * %d", f(v), days))
		ask = fmt.Sprintf("How much does %s earn in a week?", p.name)
	}
	if level >= 3 {
		weeks := b.between(2, 8)
		s = append(s, fmt.Sprintf("%s keeps the job for %d weeks.", capitalize(p.subj), weeks))
		v = b.op(fmt.Sprintf("pay for %d weeks", weeks), fmt.Sprintf("%s * %d", f(v), weeks))
		ask = fmt.Sprintf("How much does %s earn in those weeks?", p.name)
	}
	if level >= 4 {
		if b.r.IntN(2) == 0 {
			bonus := b.between(2, 20) * 5
			s = append(s, fmt.Sprintf("At the end %s also gets a bonus of %s.", p.subj, dollars(big.NewRat(int64(bonus), 1))))
			v = b.op("pay with the bonus", fmt.Sprintf("%s + %d", f(v), bonus))
			ask = fmt.Sprintf("How much does %s get in total?", p.name)
		} else {
			vf, _ := v.Float64()
			spend := b.between(1, max(1, int(vf/2)))
			s = append(s, fmt.Sprintf("%s spends %s of it on a %s.", capitalize(p.subj), dollars(big.NewRat(int64(spend), 1)), b.pick([]string{"bicycle", "concert", "gift", "school trip", "new phone case"})))
			v = b.op("money left after spending", fmt.Sprintf("%s - %d", f(v), spend))
			ask = fmt.Sprintf("How much money does %s have left?", p.name)
		}
	}
	if level >= 5 {
		parts := []int{2, 4, 5}[b.r.IntN(3)]
		frac := map[int]string{2: "half", 4: "a quarter", 5: "a fifth"}[parts]
		s = append(s, fmt.Sprintf("%s puts %s of that money into savings.", capitalize(p.subj), frac))
		v = b.op("money saved", fmt.Sprintf("%s / %d", f(v), parts))
		ask = fmt.Sprintf("How much does %s save?", p.name)
	}
	_ = v
	s = append(s, ask)
	return sentences(s), true
}

func travel(b *builder, level int) (string, bool) {
	p, q := b.people2()
	unit, fuel, per := "kilometers", "liters", "kilometers per liter"
	if b.r.IntN(2) == 0 {
		unit, fuel, per = "miles", "gallons", "miles per gallon"
	}
	speed := b.between(4, 16) * 5
	hours := b.between(1, 6)
	vehicle := b.pick([]string{"car", "van", "truck", "camper"})
	s := []string{fmt.Sprintf("%s drives a %s at %d %s per hour for %s.", p.name, vehicle, speed, unit, count(hours, "an hour", "hours"))}
	d := b.op("distance of the first part", fmt.Sprintf("%d * %d", speed, hours))
	ask := fmt.Sprintf("How many %s does %s drive?", unit, p.name)
	if level >= 2 {
		more := b.between(2, 30) * 5
		s = append(s, fmt.Sprintf("Then %s drives another %d %s to pick up %s.", p.subj, more, unit, q.name))
		d = b.op("total distance", fmt.Sprintf("%s + %d", f(d), more))
		ask = fmt.Sprintf("How many %s does %s drive in total?", unit, p.name)
	}
	if level >= 3 {
		var eff []int
		for _, e := range []int{4, 5, 8, 10, 12, 15, 20, 25} {
			if new(big.Rat).Quo(d, big.NewRat(int64(e), 1)).IsInt() {
				eff = append(eff, e)
			}
		}
		if len(eff) == 0 {
			return "", false
		}
		e := eff[b.r.IntN(len(eff))]
		s = append(s, fmt.Sprintf("The %s goes %d %s.", vehicle, e, per))
		d = b.op(fmt.Sprintf("%s of fuel used", fuel), fmt.Sprintf("%s / %d", f(d), e))
		ask = fmt.Sprintf("How many %s of fuel does the %s use?", fuel, vehicle)
	}
	if level >= 4 {
		price := b.money(1, 5)
		s = append(s, fmt.Sprintf("Fuel costs %s per %s.", dollars(price), strings.TrimSuffix(fuel, "s")))
		d = b.op("cost of the fuel", fmt.Sprintf("%s * %s", f(d), f(price)))
		ask = "How much does the fuel cost, in dollars?"
	}
	if level >= 5 {
		n := []int{2, 4, 5}[b.r.IntN(3)]
		s = append(s, fmt.Sprintf("%s and %s share the fuel cost equally.", p.name, count(n-1, "a friend", "friends")))
		d = b.op("each person's share", fmt.Sprintf("%s / %d", f(d), n))
		ask = "How much does each person pay, in dollars?"
	}
	s = append(s, ask)
	return sentences(s), true
}

var ingredients = []string{"flour", "sugar", "milk", "oats", "rice", "yogurt"}

var bakes = []thing{{"muffin", "muffins"}, {"pancake", "pancakes"}, {"cookie", "cookies"}, {"bread roll", "bread rolls"}, {"waffle", "waffles"}}

func recipe(b *builder, level int) (string, bool) {
	p, _ := b.people2()
	ing := b.pick(ingredients)
	bk := bakes[b.r.IntN(len(bakes))]
	batch := []int{4, 5, 8, 10, 12, 16, 20, 24}[b.r.IntN(8)]
	cups := b.between(1, 6)
	s := []string{fmt.Sprintf("A recipe for %d %s uses %d cups of %s.", batch, bk.many, cups, ing)}
	per := b.op(fmt.Sprintf("cups of %s per %s", ing, bk.one), fmt.Sprintf("%d / %d", cups, batch))
	ask := fmt.Sprintf("How many cups of %s does one %s need?", ing, bk.one)
	v := per
	if level >= 2 {
		want := b.between(2, 12) * batch / 2
		s = append(s, fmt.Sprintf("%s wants to make %d %s.", p.name, want, bk.many))
		v = b.op(fmt.Sprintf("cups of %s for %d %s", ing, want, bk.many), fmt.Sprintf("%s * %d", f(per), want))
		ask = fmt.Sprintf("How many cups of %s does %s need?", ing, p.name)
	}
	if level >= 3 {
		price := b.money(1, 3)
		s = append(s, fmt.Sprintf("One cup of %s costs %s.", ing, dollars(price)))
		v = b.op(fmt.Sprintf("cost of the %s", ing), fmt.Sprintf("%s * %s", f(v), f(price)))
		ask = fmt.Sprintf("How much does the %s cost, in dollars?", ing)
	}
	if level >= 4 {
		other := b.money(2, 12)
		s = append(s, fmt.Sprintf("The other ingredients cost %s.", dollars(other)))
		v = b.op("cost of all ingredients", fmt.Sprintf("%s + %s", f(v), f(other)))
		ask = "How much do all the ingredients cost, in dollars?"
	}
	if level >= 5 {
		n := []int{2, 4, 5}[b.r.IntN(3)]
		s = append(s, fmt.Sprintf("%s splits the cost equally with %s.", p.name, count(n-1, "a friend", "friends")))
		v = b.op("each person's share", fmt.Sprintf("%s / %d", f(v), n))
		ask = "How much does each person pay, in dollars?"
	}
	_ = v
	s = append(s, ask)
	return sentences(s), true
}

func garden(b *builder, level int) (string, bool) {
	p, _ := b.people2()
	l, w := b.between(3, 30), b.between(2, 20)
	place := b.pick([]string{"garden", "yard", "vegetable patch", "playground", "flower bed"})
	s := []string{fmt.Sprintf("%s's %s is a rectangle %d meters long and %d meters wide.", p.name, place, l, w)}
	var ask string
	if b.r.IntN(2) == 0 {
		v := b.op("area in square meters", fmt.Sprintf("%d * %d", l, w))
		ask = fmt.Sprintf("What is the area of the %s in square meters?", place)
		if level >= 2 {
			k := b.between(2, 6)
			s = append(s, fmt.Sprintf("%s plants %d seedlings in every square meter.", capitalize(p.subj), k))
			v = b.op("seedlings needed", fmt.Sprintf("%s * %d", f(v), k))
			ask = "How many seedlings are planted?"
		}
		if level >= 3 {
			vf, _ := v.Float64()
			have := b.between(1, max(1, int(vf)-1))
			s = append(s, fmt.Sprintf("%s already has %d seedlings.", capitalize(p.subj), have))
			v = b.op("seedlings still to buy", fmt.Sprintf("%s - %d", f(v), have))
			ask = fmt.Sprintf("How many more seedlings does %s need?", p.name)
		}
		if level >= 4 {
			var trays []int
			for _, t := range []int{2, 3, 4, 5, 6, 8, 10, 12} {
				if new(big.Rat).Quo(v, big.NewRat(int64(t), 1)).IsInt() {
					trays = append(trays, t)
				}
			}
			if len(trays) == 0 {
				return "", false
			}
			t := trays[b.r.IntN(len(trays))]
			s = append(s, fmt.Sprintf("Seedlings are sold in trays of %d.", t))
			v = b.op("trays to buy", fmt.Sprintf("%s / %d", f(v), t))
			ask = fmt.Sprintf("How many trays does %s buy?", p.name)
		}
		if level >= 5 {
			price := b.money(2, 9)
			s = append(s, fmt.Sprintf("Each tray costs %s.", dollars(price)))
			b.op("cost of the trays", fmt.Sprintf("%s * %s", f(v), f(price)))
			ask = "How much do the trays cost, in dollars?"
		}
	} else {
		half := b.op("length plus width", fmt.Sprintf("%d + %d", l, w))
		ask = fmt.Sprintf("What is the length plus the width of the %s, in meters?", place)
		v := half
		if level >= 2 {
			v = b.op("perimeter in meters", fmt.Sprintf("%s * 2", f(half)))
			ask = fmt.Sprintf("How many meters of fence go all the way around the %s?", place)
		}
		if level >= 3 {
			price := b.money(2, 12)
			s = append(s, fmt.Sprintf("Fencing costs %s per meter.", dollars(price)))
			v = b.op("cost of the fence", fmt.Sprintf("%s * %s", f(v), f(price)))
			ask = "How much does the fence cost, in dollars?"
		}
		if level >= 4 {
			gate := b.between(3, 20) * 5
			s = append(s, fmt.Sprintf("A gate costs another %s.", dollars(big.NewRat(int64(gate), 1))))
			v = b.op("cost of the fence and the gate", fmt.Sprintf("%s + %d", f(v), gate))
			ask = "How much do the fence and the gate cost together, in dollars?"
		}
		if level >= 5 {
			n := []int{2, 4, 5}[b.r.IntN(3)]
			s = append(s, fmt.Sprintf("%s shares the cost equally with %s.", p.name, count(n-1, "a neighbor", "neighbors")))
			b.op("each share", fmt.Sprintf("%s / %d", f(v), n))
			ask = "How much does each person pay, in dollars?"
		}
	}
	s = append(s, ask)
	return sentences(s), true
}

func ages(b *builder, level int) (string, bool) {
	p, q := b.people2()
	a := b.between(3, 14)
	k := b.between(2, 4)
	word := map[int]string{2: "twice", 3: "three times", 4: "four times"}[k]
	s := []string{fmt.Sprintf("%s is %d years old.", p.name, a),
		fmt.Sprintf("%s %s %s is %s as old as %s.", p.name+"'s", b.pick([]string{"cousin", "neighbor", "friend", "classmate's sibling"}), q.name, word, p.name)}
	v := b.op(fmt.Sprintf("%s's age", q.name), fmt.Sprintf("%d * %d", a, k))
	ask := fmt.Sprintf("How old is %s?", q.name)
	if level >= 2 {
		m := b.between(20, 35)
		s = append(s, fmt.Sprintf("%s's mother is %d years older than %s.", q.name, m, q.name))
		v = b.op(fmt.Sprintf("%s's mother's age", q.name), fmt.Sprintf("%s + %d", f(v), m))
		ask = fmt.Sprintf("How old is %s's mother?", q.name)
	}
	if level >= 3 {
		g := b.between(20, 30)
		s = append(s, fmt.Sprintf("%s's grandfather is %d years older than %s's mother.", q.name, g, q.name))
		v = b.op("the grandfather's age", fmt.Sprintf("%s + %d", f(v), g))
		ask = fmt.Sprintf("How old is %s's grandfather?", q.name)
	}
	if level >= 4 {
		y := b.between(2, 12)
		v = b.op(fmt.Sprintf("the grandfather's age in %d years", y), fmt.Sprintf("%s + %d", f(v), y))
		ask = fmt.Sprintf("How old will %s's grandfather be in %d years?", q.name, y)
	}
	if level >= 5 {
		v = b.op(fmt.Sprintf("difference from %s's age today", p.name), fmt.Sprintf("%s - %d", f(v), a))
		ask = fmt.Sprintf("How many years more than %s's age today is that?", p.name)
	}
	if v.Cmp(big.NewRat(115, 1)) > 0 {
		return "", false
	}
	s = append(s, ask)
	return sentences(s), true
}

var venues = []struct{ place, row, seat, event string }{
	{"theater", "rows", "seats", "play"}, {"stadium", "sections", "seats", "match"},
	{"concert hall", "rows", "chairs", "concert"}, {"school gym", "rows", "chairs", "talent show"},
	{"cinema", "rows", "seats", "film premiere"},
}

func venue(b *builder, level int) (string, bool) {
	v := venues[b.r.IntN(len(venues))]
	p, _ := b.people2()
	rows, per := b.between(4, 30), b.between(6, 40)
	s := []string{fmt.Sprintf("A %s has %d %s with %d %s in each.", v.place, rows, v.row, per, v.seat)}
	n := b.op(fmt.Sprintf("%s in the %s", v.seat, v.place), fmt.Sprintf("%d * %d", rows, per))
	ask := fmt.Sprintf("How many %s does the %s have?", v.seat, v.place)
	if level >= 2 {
		nf, _ := n.Float64()
		empty := b.between(1, max(1, int(nf)/3))
		s = append(s, fmt.Sprintf("At the %s, %d %s stay empty and every other one is taken.", v.event, empty, v.seat))
		n = b.op("people at the "+v.event, fmt.Sprintf("%s - %d", f(n), empty))
		ask = fmt.Sprintf("How many people come to the %s?", v.event)
	}
	if level >= 3 {
		price := b.money(3, 25)
		s = append(s, fmt.Sprintf("Each ticket costs %s.", dollars(price)))
		n = b.op("ticket money", fmt.Sprintf("%s * %s", f(n), f(price)))
		ask = "How much money do the tickets bring in, in dollars?"
	}
	if level >= 4 {
		nf, _ := n.Float64()
		cost := b.between(1, max(1, int(nf)/2))
		s = append(s, fmt.Sprintf("%s, who runs the %s, pays %s for staff that night.", p.name, v.place, dollars(big.NewRat(int64(cost), 1))))
		n = b.op("money left after paying staff", fmt.Sprintf("%s - %d", f(n), cost))
		ask = fmt.Sprintf("How much money is left for %s, in dollars?", p.name)
	}
	if level >= 5 {
		k := []int{2, 4, 5}[b.r.IntN(3)]
		s = append(s, fmt.Sprintf("%s shares what is left equally with %s.", p.name, count(k-1, "a partner", "partners")))
		b.op("each share", fmt.Sprintf("%s / %d", f(n), k))
		ask = "How much does each of them get, in dollars?"
	}
	s = append(s, ask)
	return sentences(s), true
}

var contests = []struct{ game, games, verb, unit string }{
	{"basketball game", "basketball games", "scores", "points"}, {"spelling bee round", "spelling bee rounds", "spells", "words"},
	{"bowling game", "bowling games", "knocks down", "pins"}, {"quiz", "quizzes", "scores", "points"},
	{"swimming practice", "swimming practices", "swims", "laps"}, {"week", "weeks", "reads", "pages"},
}

// scores adds up or averages a list of results: a total of 2 or 3 for
// levels 1 and 2, the average of 3, 4 or 5 for levels 3 to 5 (the average
// may be a decimal).
func scores(b *builder, level int) (string, bool) {
	p, _ := b.people2()
	c := contests[b.r.IntN(len(contests))]
	n := map[int]int{1: 2, 2: 3, 3: 3, 4: 4, 5: 5}[level]
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprint(b.between(5, 60))
	}
	ordinals := []string{"first", "second", "third", "fourth", "fifth"}
	var parts []string
	for i, v := range vals {
		parts = append(parts, fmt.Sprintf("%s %s in the %s", v, c.unit, ordinals[i]))
	}
	s := []string{fmt.Sprintf("In %d %s, %s %s %s.", n, c.games, p.name, c.verb, joinAnd(parts))}
	sum := vals[0]
	for i := 1; i < n; i++ {
		v := b.op(fmt.Sprintf("%s after the %s", c.unit, ordinals[i]), fmt.Sprintf("%s + %s", sum, vals[i]))
		sum = f(v)
	}
	ask := fmt.Sprintf("How many %s is that in all?", c.unit)
	if level >= 3 {
		b.op(fmt.Sprintf("average %s", c.unit), fmt.Sprintf("%s / %d", sum, n))
		ask = fmt.Sprintf("What is %s's average number of %s per %s?", p.name, c.unit, c.game)
	}
	s = append(s, ask)
	return sentences(s), true
}

// count writes one ("a friend") for 1 and "3 friends" for more.
func count(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf("%d %s", n, many)
}
