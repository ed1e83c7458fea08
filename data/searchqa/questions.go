package searchqa

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"whale/data"
)

// Keys of Task.Hidden set by this package.
const (
	// HiddenGoldDocs lists the ids of the documents that hold the answer's
	// facts, space separated, in the order a solver needs them.
	HiddenGoldDocs = "gold_docs"
	// HiddenHops is "1" or "2".
	HiddenHops = "hops"
)

type question struct {
	text    string
	answer  string
	aliases []string
	docs    []int
	hops    int
}

// phrase picks one of several phrasings, so that questions of one template
// do not all read alike.
func phrase(r *rand.Rand, forms ...string) string { return forms[r.IntN(len(forms))] }

func year(y int) (string, []string) { return fmt.Sprint(y), nil }

// questions lists every single-hop and every two-hop question the world
// can answer. Each fact is asked once.
func (w *world) questions(r *rand.Rand) (single, double []question) {
	ask := func(subject string, forms ...string) string { return fmt.Sprintf(phrase(r, forms...), subject) }
	one := func(text, ans string, aliases []string, doc int) {
		single = append(single, question{text: text, answer: ans, aliases: aliases, docs: []int{doc}, hops: 1})
	}
	two := func(text, ans string, aliases []string, first, second int) {
		double = append(double, question{text: text, answer: ans, aliases: aliases, docs: []int{first, second}, hops: 2})
	}
	for i, c := range w.countries {
		d := w.countryDoc(i)
		one(ask(c.name, "What is the capital of %s?", "Which city is the capital of %s?"), w.cities[c.capital].name, nil, d)
		one(ask(c.name, "What is the official language of %s?", "Which language is official in %s?"), c.language, nil, d)
		one(ask(c.name, "What is the currency of %s?", "Which currency is used in %s?"), c.currency, nil, d)
		one(ask(c.name, "On which continent is %s?", "Which continent is %s in?"), c.continent, nil, d)
		y, a := year(c.independence)
		one(ask(c.name, "In what year did %s become independent?", "When did %s gain independence?"), y, a, d)
	}
	for i, c := range w.cities {
		d := w.cityDoc(i)
		co := w.countries[c.country]
		one(ask(c.name, "In which country is %s?", "Which country is the city of %s in?"), co.name, nil, d)
		y, a := year(c.founded)
		one(ask(c.name, "In what year was the city of %s founded?", "When was the city of %s founded?"), y, a, d)
		two(ask(c.name, "What is the capital of the country where %s is located?", "Which city is the capital of the country that %s belongs to?"),
			w.cities[co.capital].name, nil, d, w.countryDoc(c.country))
		two(ask(c.name, "What currency is used in the country where the city of %s lies?", "What is the currency of the country in which %s is located?"),
			co.currency, nil, d, w.countryDoc(c.country))
		if c.mayor >= 0 {
			m := w.people[c.mayor]
			one(ask(c.name, "Who is the mayor of %s?", "Who serves as mayor of %s?"), m.name(), nil, d)
			two(ask(c.name, "What is the occupation of the mayor of %s?", "What does the mayor of %s do for a living?"),
				m.occupation, nil, d, w.personDoc(c.mayor))
		}
		if c.river >= 0 {
			rv := w.rivers[c.river]
			one(ask(c.name, "Which river flows through %s?", "What river runs through the city of %s?"), rv.name, riverAliases(rv.name), d)
			two(ask(c.name, "Into which sea does the river that flows through %s empty?", "Which sea does the river running through %s flow into?"),
				rv.sea, nil, d, w.riverDoc(c.river))
			two(ask(c.name, "How long, in kilometres, is the river that flows through %s?", "What is the length in kilometres of the river through %s?"),
				fmt.Sprint(rv.length), kmAliases(rv.length), d, w.riverDoc(c.river))
		}
	}
	for i, rv := range w.rivers {
		d := w.riverDoc(i)
		one(ask(rv.name, "Into which sea does the %s flow?", "Which sea does the %s empty into?"), rv.sea, nil, d)
		one(ask(rv.name, "How long is the %s in kilometres?", "What is the length of the %s in kilometres?"), fmt.Sprint(rv.length), kmAliases(rv.length), d)
		one(ask(rv.name, "In which country does the %s rise?", "Where does the %s have its source? Name the country."), w.countries[rv.source].name, nil, d)
		two(ask(rv.name, "What is the capital of the country where the %s rises?", "Which city is the capital of the country in which the %s has its source?"),
			w.cities[w.countries[rv.source].capital].name, nil, d, w.countryDoc(rv.source))
	}
	for i, p := range w.people {
		d := w.personDoc(i)
		bc := w.cities[p.birthCity]
		y, a := year(p.born)
		one(ask(p.name(), "In what year was %s born?", "When was %s born?"), y, a, d)
		one(ask(p.name(), "In which city was %s born?", "What is the birthplace of %s? Name the city."), bc.name, nil, d)
		one(ask(p.name(), "What is the occupation of %s?", "What does %s do for a living?"), p.occupation, nil, d)
		two(ask(p.name(), "What is the official language of the country where %s was born?", "Which language is official in the birth country of %s?"),
			w.countries[bc.country].language, nil, d, w.countryDoc(bc.country))
		if bc.mayor >= 0 && bc.mayor != i {
			two(ask(p.name(), "Who is the mayor of the city where %s was born?", "Who is mayor of the birthplace of %s?"),
				w.people[bc.mayor].name(), nil, d, w.cityDoc(p.birthCity))
		}
		if p.employer >= 0 {
			c := w.companies[p.employer]
			one(ask(p.name(), "Which company does %s work for?", "Who is the employer of %s?"), c.name, companyAliases(c.name), d)
			y, a := year(c.founded)
			two(ask(p.name(), "In what year was the company that %s works for founded?", "When was the employer of %s founded?"),
				y, a, d, w.companyDoc(p.employer))
			two(ask(p.name(), "In which city is the company that employs %s headquartered?", "Where is the employer of %s headquartered? Name the city."),
				w.cities[c.hq].name, nil, d, w.companyDoc(p.employer))
		}
	}
	for i, c := range w.companies {
		d := w.companyDoc(i)
		f, ceo := w.people[c.founder], w.people[c.ceo]
		y, a := year(c.founded)
		one(ask(c.name, "In what year was %s founded?", "When was %s founded?"), y, a, d)
		one(ask(c.name, "Who founded %s?", "Who is the founder of %s?"), f.name(), nil, d)
		one(ask(c.name, "Where is %s headquartered? Name the city.", "In which city does %s have its headquarters?"), w.cities[c.hq].name, nil, d)
		one(ask(c.name, "Who is the chief executive of %s?", "Who runs %s as chief executive?"), ceo.name(), nil, d)
		one(ask(c.name, "In which industry does %s operate?", "What industry is %s in?"), c.industry, nil, d)
		two(ask(c.name, "In which city was the founder of %s born?", "What is the birthplace of the person who founded %s? Name the city."),
			w.cities[f.birthCity].name, nil, d, w.personDoc(c.founder))
		y, a = year(ceo.born)
		two(ask(c.name, "In what year was the chief executive of %s born?", "When was the chief executive of %s born?"),
			y, a, d, w.personDoc(c.ceo))
		two(ask(c.name, "What is the occupation of the founder of %s?", "What did the founder of %s work as?"),
			f.occupation, nil, d, w.personDoc(c.founder))
		two(ask(c.name, "In which country is the city where %s is headquartered?", "Which country is the headquarters city of %s in?"),
			w.countries[w.cities[c.hq].country].name, nil, d, w.cityDoc(c.hq))
	}
	return single, double
}

func riverAliases(name string) []string {
	return []string{strings.TrimSuffix(name, " River")}
}

// companyAliases accepts a company's name without its form ("Oskan" for
// "Oskan Systems"): the first word of a company's name is unique in the
// world.
func companyAliases(name string) []string {
	root, _, _ := strings.Cut(name, " ")
	return []string{root}
}

func kmAliases(n int) []string {
	return []string{fmt.Sprintf("%d km", n), fmt.Sprintf("%d kilometres", n), fmt.Sprintf("%d kilometers", n)}
}

// generate returns the world's corpus and n tasks, half single-hop and
// half two-hop (as far as there are enough of each).
func generate(seed uint64, n int) ([]Doc, []data.Task) {
	w := newWorld(seed)
	docs := w.corpus()
	r := rand.New(rand.NewPCG(seed, 0x71756573)) // "ques"
	single, double := w.questions(r)
	r.Shuffle(len(single), func(i, j int) { single[i], single[j] = single[j], single[i] })
	r.Shuffle(len(double), func(i, j int) { double[i], double[j] = double[j], double[i] })
	nd := min(n/2, len(double))
	ns := min(n-nd, len(single))
	if ns+nd < n {
		nd = min(n-ns, len(double))
	}
	picked := append(append([]question{}, single[:ns]...), double[:nd]...)
	tasks := make([]data.Task, 0, len(picked))
	seen := map[string]bool{}
	for _, q := range picked {
		if seen[q.text] {
			continue // two phrasings can meet only if templates collide; keep the first
		}
		seen[q.text] = true
		ids := make([]string, len(q.docs))
		for i, d := range q.docs {
			ids[i] = docs[d].ID
		}
		tasks = append(tasks, data.Task{
			ID:      fmt.Sprintf("searchqa-%d-%05d", seed, len(tasks)),
			Domain:  Name,
			Problem: q.text,
			Answer:  q.answer,
			Aliases: q.aliases,
			Level:   q.hops,
			Hidden:  map[string]string{HiddenGoldDocs: strings.Join(ids, " "), HiddenHops: fmt.Sprint(q.hops)},
		})
	}
	return docs, tasks
}
