package searchqa

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// World sizes. With the question templates they give about 6,000
// single-hop and 5,000 two-hop facts, enough for the default splits with
// every fact asked at most once.
const (
	nCountries = 40
	nCities    = 240
	nRivers    = 50
	nPeople    = 900
	nCompanies = 300
	nEvents    = 160
)

type country struct {
	name, continent, language, currency string
	capital, independence               int
}

type city struct {
	name                  string
	country, founded, pop int
	river, mayor          int // -1: none
	capital               bool
}

type personT struct {
	first, last               string
	born, birthCity, employer int // employer -1: none
	occupation                string
}

func (p personT) name() string { return p.first + " " + p.last }

type company struct {
	name, industry            string
	founded, founder, hq, ceo int
}

type river struct {
	name, sea      string
	length, source int
	cities         []int
}

type event struct {
	name                string
	city, since, person int
	sponsors            []int
}

// world is the generated set of entities. Every name is unique; some
// differ from another by one letter on purpose.
type world struct {
	countries []country
	cities    []city
	rivers    []river
	people    []personT
	companies []company
	events    []event
}

type namer struct {
	r    *rand.Rand
	used map[string]bool
}

var (
	onsets = []string{"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "st", "th", "sh", "gr", "tr", "h", "j"}
	vowels = []string{"a", "e", "i", "o", "u", "a", "e", "o", "ai", "ei", "ou"}
	codas  = []string{"", "", "", "n", "r", "l", "s", "m", "th", "k", "nd"}
)

// word makes an invented word of syl syllables, so that no model can know
// the world's facts from pretraining.
func (n *namer) word(syl int) string {
	var b strings.Builder
	for i := 0; i < syl; i++ {
		b.WriteString(onsets[n.r.IntN(len(onsets))])
		b.WriteString(vowels[n.r.IntN(len(vowels))])
	}
	b.WriteString(codas[n.r.IntN(len(codas))])
	w := b.String()
	return strings.ToUpper(w[:1]) + w[1:]
}

// fresh returns an unused name built by make, retrying until one is free.
func (n *namer) fresh(make func() string) string {
	for {
		s := make()
		if !n.used[strings.ToLower(s)] {
			n.used[strings.ToLower(s)] = true
			return s
		}
	}
}

// nearDuplicate returns an unused name that differs from base in one vowel,
// or "" when none is found.
func (n *namer) nearDuplicate(base string) string {
	rs := []rune(base)
	for try := 0; try < 20; try++ {
		i := n.r.IntN(len(rs))
		if !strings.ContainsRune("aeiou", rs[i]) {
			continue
		}
		c := append([]rune{}, rs...)
		c[i] = []rune("aeiou")[n.r.IntN(5)]
		s := string(c)
		if s != base && !n.used[strings.ToLower(s)] {
			n.used[strings.ToLower(s)] = true
			return s
		}
	}
	return ""
}

// name returns a fresh name, a fifth of the time a near duplicate of one
// of prev.
func (n *namer) name(prev []string, make func() string) string {
	if len(prev) > 0 && n.r.IntN(5) == 0 {
		if s := n.nearDuplicate(prev[n.r.IntN(len(prev))]); s != "" {
			return s
		}
	}
	return n.fresh(make)
}

var (
	continents  = []string{"Europe", "Asia", "Africa", "South America", "North America", "Oceania"}
	langSuffix  = []string{"ic", "ese", "ish", "ian", "i"}
	currencies  = []string{"crown", "mark", "dinar", "florin", "real", "thaler", "lira", "shilling"}
	occupations = []string{"architect", "painter", "chemist", "novelist", "engineer", "composer", "surgeon", "economist",
		"photographer", "botanist", "journalist", "sculptor", "astronomer", "lawyer", "historian", "cartographer", "pilot", "chef"}
	industries  = []string{"shipping", "software", "mining", "textile", "brewing", "railway", "insurance", "pharmaceutical", "publishing", "aircraft"}
	companyForm = []string{"Industries", "Systems", "Works", "Holdings", "Group", "Trading", "Labs", "Company"}
	eventKinds  = []string{"Trade Fair", "Film Festival", "Book Fair", "Jazz Festival", "Marathon", "Science Forum"}
)

func newWorld(seed uint64) *world {
	r := rand.New(rand.NewPCG(seed, 0x7365617263687161)) // "searchqa"
	n := &namer{r: r, used: map[string]bool{}}
	w := &world{}
	var prev []string
	for i := 0; i < nCountries; i++ {
		name := n.name(prev, func() string { return n.word(2 + r.IntN(2)) })
		prev = append(prev, name)
		stem := strings.TrimRight(name, "aeiou")
		w.countries = append(w.countries, country{
			name:         name,
			continent:    continents[r.IntN(len(continents))],
			language:     stem + langSuffix[r.IntN(len(langSuffix))],
			currency:     stem + langSuffix[r.IntN(len(langSuffix))] + " " + currencies[r.IntN(len(currencies))],
			independence: 1800 + r.IntN(200),
			capital:      -1,
		})
	}
	prev = prev[:0]
	for i := 0; i < nCities; i++ {
		name := n.name(prev, func() string { return n.word(2 + r.IntN(2)) })
		prev = append(prev, name)
		c := i % nCountries // every country gets cities; the first is its capital
		w.cities = append(w.cities, city{name: name, country: c, founded: 800 + r.IntN(1150),
			pop: (20 + r.IntN(4000)) * 1000, river: -1, mayor: -1, capital: i < nCountries})
		if i < nCountries {
			w.countries[c].capital = i
		}
	}
	seas := []string{}
	for i := 0; i < 12; i++ {
		seas = append(seas, "Sea of "+n.fresh(func() string { return n.word(2) }))
	}
	prev = prev[:0]
	free := r.Perm(nCities)
	for i := 0; i < nRivers; i++ {
		root := n.name(prev, func() string { return n.word(1 + r.IntN(2)) })
		prev = append(prev, root)
		rv := river{name: root + " River", sea: seas[r.IntN(len(seas))], length: 80 + r.IntN(2900)}
		for k := 0; k < 2+r.IntN(3) && len(free) > 0; k++ {
			c := free[0]
			free = free[1:]
			w.cities[c].river = i
			rv.cities = append(rv.cities, c)
		}
		rv.source = w.cities[rv.cities[0]].country
		w.rivers = append(w.rivers, rv)
	}
	var firsts, lasts []string
	for i := 0; i < 160; i++ {
		firsts = append(firsts, n.name(firsts, func() string { return n.word(1 + r.IntN(2)) }))
	}
	for i := 0; i < 320; i++ {
		lasts = append(lasts, n.name(lasts, func() string { return n.word(2 + r.IntN(2)) }))
	}
	full := map[string]bool{}
	for len(w.people) < nPeople {
		p := personT{first: firsts[r.IntN(len(firsts))], last: lasts[r.IntN(len(lasts))],
			born: 1920 + r.IntN(80), birthCity: r.IntN(nCities), employer: -1,
			occupation: occupations[r.IntN(len(occupations))]}
		if full[p.name()] {
			continue
		}
		full[p.name()] = true
		w.people = append(w.people, p)
	}
	prev = prev[:0]
	for i := 0; i < nCompanies; i++ {
		root := n.name(prev, func() string { return n.word(2) })
		prev = append(prev, root)
		founder := r.IntN(nPeople)
		ceo := (founder + 1 + r.IntN(nPeople-1)) % nPeople
		w.companies = append(w.companies, company{
			name:     root + " " + companyForm[r.IntN(len(companyForm))],
			industry: industries[r.IntN(len(industries))],
			founded:  min(2020, w.people[founder].born+22+r.IntN(35)),
			founder:  founder, hq: r.IntN(nCities), ceo: ceo,
		})
	}
	for i := range w.people {
		if r.IntN(10) < 6 {
			w.people[i].employer = r.IntN(nCompanies)
		}
	}
	for i := range w.cities {
		if r.IntN(10) < 7 {
			w.cities[i].mayor = r.IntN(nPeople)
		}
	}
	for i := 0; i < nEvents; i++ {
		ev := event{since: 1950 + r.IntN(70), person: r.IntN(nPeople),
			sponsors: []int{r.IntN(nCompanies), r.IntN(nCompanies)}}
		ev.name = n.fresh(func() string {
			ev.city = r.IntN(nCities)
			return w.cities[ev.city].name + " " + eventKinds[r.IntN(len(eventKinds))]
		})
		w.events = append(w.events, ev)
	}
	return w
}

// Document ids by kind and index, in corpus order.
func (w *world) countryDoc(i int) int { return i }
func (w *world) cityDoc(i int) int    { return nCountries + i }
func (w *world) riverDoc(i int) int   { return nCountries + nCities + i }
func (w *world) personDoc(i int) int  { return nCountries + nCities + nRivers + i }
func (w *world) companyDoc(i int) int { return nCountries + nCities + nRivers + nPeople + i }

// corpus renders every entity as a short document, then the distractor
// documents (events that name people, cities and companies in passing
// without stating their facts).
func (w *world) corpus() []Doc {
	var docs []Doc
	add := func(title, text string) {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", len(docs)), Title: title, Text: text})
	}
	for _, c := range w.countries {
		add(c.name, fmt.Sprintf("%s is a country in %s. Its capital is %s. The official language of %s is %s, and its currency is the %s. %s became independent in %d.",
			c.name, c.continent, w.cities[c.capital].name, c.name, c.language, c.currency, c.name, c.independence))
	}
	for _, c := range w.cities {
		s := fmt.Sprintf("%s is a city in %s, founded in %d. It has about %s inhabitants.", c.name, w.countries[c.country].name, c.founded, thousands(c.pop))
		if c.capital {
			s += fmt.Sprintf(" It is the capital of %s.", w.countries[c.country].name)
		}
		if c.river >= 0 {
			s += fmt.Sprintf(" The %s flows through %s.", w.rivers[c.river].name, c.name)
		}
		if c.mayor >= 0 {
			s += fmt.Sprintf(" The mayor of %s is %s.", c.name, w.people[c.mayor].name())
		}
		add(c.name, s)
	}
	for _, rv := range w.rivers {
		var names []string
		for _, c := range rv.cities {
			names = append(names, w.cities[c].name)
		}
		add(rv.name, fmt.Sprintf("The %s is a river that rises in %s and flows into the %s. It is %d kilometres long. Cities on the %s include %s.",
			rv.name, w.countries[rv.source].name, rv.sea, rv.length, rv.name, strings.Join(names, ", ")))
	}
	for i, p := range w.people {
		bc := w.cities[p.birthCity]
		s := fmt.Sprintf("%s (born %d) is %s %s. %s was born in %s, %s.", p.name(), p.born, article(p.occupation), p.occupation, p.last, bc.name, w.countries[bc.country].name)
		if p.employer >= 0 {
			s += fmt.Sprintf(" %s works for %s.", p.last, w.companies[p.employer].name)
		}
		for _, c := range w.companies {
			if c.founder == i {
				s += fmt.Sprintf(" In %d %s founded %s.", c.founded, p.last, c.name)
			}
		}
		add(p.name(), s)
	}
	for _, c := range w.companies {
		add(c.name, fmt.Sprintf("%s is %s %s company founded in %d by %s. It is headquartered in %s. Its chief executive is %s.",
			c.name, article(c.industry), c.industry, c.founded, w.people[c.founder].name(), w.cities[c.hq].name, w.people[c.ceo].name()))
	}
	for _, e := range w.events {
		add(e.name, fmt.Sprintf("The %s has been held in %s every year since %d. Sponsors have included %s and %s. %s once spoke at the opening.",
			e.name, w.cities[e.city].name, e.since, w.companies[e.sponsors[0]].name, w.companies[e.sponsors[1]].name, w.people[e.person].name()))
	}
	return docs
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
