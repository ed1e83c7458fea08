package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"whale/data"
	"whale/data/chess"
	"whale/data/domains"
	"whale/data/math"
)

func init() { register(newDataCmd) }

func newDataCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "data",
		Short: "Look at, check and generate task domains (math, searchqa, chess) and imported data",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	c.AddCommand(newDataSampleCmd(), newDataCheckCmd(), newDataGenerateCmd())
	return c
}

// sourceFlags are the flags that say where tasks come from: a domain
// (generated or built in) or an imported file.
type sourceFlags struct {
	domain, file, data, format, themes string
	seed                               uint64
	skipBad                            bool
	cmd                                *cobra.Command // for --themes's report on its stderr
}

func (s *sourceFlags) add(c *cobra.Command) {
	s.cmd = c
	f := c.Flags()
	domainFlag(f, &s.domain)
	f.StringVar(&s.file, "file", "", "import tasks from this file instead (with --format; for qa: QUESTIONS.jsonl,CORPUS.jsonl; for splits: a directory from 'data generate')")
	f.StringVar(&s.data, "data", "", "same as --file")
	f.StringVar(&s.format, "format", "", "format of --file: "+strings.Join(domains.Formats(), ", "))
	f.Uint64Var(&s.seed, "seed", 1, "seed of a generated domain, or of the split of an imported file (chess uses its committed set whatever the seed)")
	f.BoolVar(&s.skipBad, "skip-bad", false, "skip malformed records of --file and list them, instead of failing")
	f.StringVar(&s.themes, "themes", "", "with --format lichess: keep only puzzles with one of these comma-separated themes (e.g. mateIn1,hangingPiece); counts per theme go to stderr")
}

// source describes where the tasks came from, for reports.
type source struct {
	Kind   string `json:"kind"` // "generated", "builtin" or "file"
	Path   string `json:"path,omitempty"`
	Format string `json:"format,omitempty"`
	Seed   uint64 `json:"seed"`
}

// open checks the flags and returns the domain they name. Flag misuse is
// a usageError; a bad file is a plain error naming file:line and field.
func (s *sourceFlags) open() (data.Domain, []data.BadLine, source, error) {
	if s.data != "" {
		if s.file != "" && s.file != s.data {
			return nil, nil, source{}, usageError{errors.New("--file and --data name different files; give one")}
		}
		s.file = s.data
	}
	if s.domain != "" && !slices.Contains(domains.Names(), s.domain) {
		return nil, nil, source{}, usageError{fmt.Errorf("unknown --domain %q (want one of %s)", s.domain, strings.Join(domains.Names(), ", "))}
	}
	if s.file == "" {
		if s.format != "" {
			return nil, nil, source{}, usageError{errors.New("--format needs --file")}
		}
		if s.skipBad {
			return nil, nil, source{}, usageError{errors.New("--skip-bad needs --file")}
		}
		if s.domain == "" {
			return nil, nil, source{}, usageError{errors.New("give --domain, or --file with --format")}
		}
		d, err := domains.Open(s.domain, s.seed)
		if err != nil {
			return nil, nil, source{}, err
		}
		src := source{Kind: "generated", Seed: s.seed}
		if s.domain == chess.Name {
			src = source{Kind: "builtin", Seed: chess.BuiltinSeed}
		}
		return d, nil, src, nil
	}
	if s.format == "" {
		return nil, nil, source{}, usageError{fmt.Errorf("--file needs --format (one of %s)", strings.Join(domains.Formats(), ", "))}
	}
	fd, ok := domains.FormatDomain(s.format)
	if !ok {
		return nil, nil, source{}, usageError{fmt.Errorf("unknown --format %q (want one of %s)", s.format, strings.Join(domains.Formats(), ", "))}
	}
	if s.domain != "" && fd != "" && fd != s.domain {
		return nil, nil, source{}, usageError{fmt.Errorf("--format %s holds %s tasks, not %s", s.format, fd, s.domain)}
	}
	themes := splitThemes(s.themes)
	if len(themes) > 0 && s.format != domains.FormatLichess {
		return nil, nil, source{}, usageError{fmt.Errorf("--themes needs --format %s", domains.FormatLichess)}
	}
	d, bad, err := domains.Import(s.format, s.file, data.ImportOptions{Seed: s.seed, SkipBad: s.skipBad, Themes: themes})
	if err != nil {
		return nil, bad, source{}, err
	}
	if len(themes) > 0 {
		w := io.Writer(os.Stderr)
		if s.cmd != nil {
			w = s.cmd.ErrOrStderr()
		}
		reportThemes(w, d, themes)
	}
	if s.domain != "" && d.Name() != s.domain {
		return nil, bad, source{}, fmt.Errorf("%s holds %s tasks, not %s", s.file, d.Name(), s.domain)
	}
	return d, bad, source{Kind: "file", Path: s.file, Format: s.format, Seed: s.seed}, nil
}

// splitNames resolves --split: one split name, or "all".
func splitNames(split string) ([]string, error) {
	if split == "all" {
		return data.Splits, nil
	}
	if !slices.Contains(data.Splits, split) {
		return nil, usageError{fmt.Errorf("unknown --split %q (want one of %s, or all)", split, strings.Join(data.Splits, ", "))}
	}
	return []string{split}, nil
}

func newDataSampleCmd() *cobra.Command {
	var (
		src    sourceFlags
		split  string
		n      int
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "sample",
		Short: "Print the first tasks of a split, as a solver sees them, with their answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 {
				return usageError{fmt.Errorf("--n must be at least 1, got %d", n)}
			}
			if _, err := splitNames(split); err != nil || split == "all" {
				return usageError{fmt.Errorf("unknown --split %q (want one of %s)", split, strings.Join(data.Splits, ", "))}
			}
			d, bad, _, err := src.open()
			if err != nil {
				return err
			}
			warnBad(cmd.ErrOrStderr(), bad)
			tasks, err := d.Tasks(split)
			if err != nil {
				return err
			}
			tasks = tasks[:min(n, len(tasks))]
			type row struct {
				ID          string   `json:"id"`
				Level       int      `json:"level,omitempty"`
				Observation string   `json:"observation"`
				Answer      string   `json:"answer"`
				Aliases     []string `json:"aliases,omitempty"`
			}
			rows := make([]row, 0, len(tasks))
			for _, t := range tasks {
				rows = append(rows, row{ID: t.ID, Level: t.Level, Observation: d.NewEpisode(t).Observe().Text, Answer: t.Answer, Aliases: t.Aliases})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, rows)
			}
			for i, r := range rows {
				if i > 0 {
					fmt.Fprintln(out)
				}
				fmt.Fprintf(out, "%s (level %d)\n%s\nanswer: %s\n", r.ID, r.Level, r.Observation, r.Answer)
				if len(r.Aliases) > 0 {
					fmt.Fprintf(out, "also accepted: %s\n", strings.Join(r.Aliases, "; "))
				}
			}
			return nil
		},
	}
	src.add(c)
	c.Flags().StringVar(&split, "split", data.SplitTrain, "split: "+strings.Join(data.Splits, ", "))
	c.Flags().IntVar(&n, "n", 5, "number of tasks")
	jsonFlag(c.Flags(), &asJSON, "print one JSON array")
	return c
}

func warnBad(w io.Writer, bad []data.BadLine) {
	if len(bad) > 0 {
		fmt.Fprintf(w, "whale: skipped %d malformed records (first: %v)\n", len(bad), bad[0])
	}
}

// checkReport is what `data check` prints.
type checkReport struct {
	Domain         string                   `json:"domain"`
	Source         source                   `json:"source"`
	Splits         []string                 `json:"splits"`
	Tasks          int                      `json:"tasks"`
	GoldRewardMean float64                  `json:"gold_reward_mean"`
	Failures       map[data.FailureKind]int `json:"failures"`
	// Failed lists the first tasks whose gold replay did not earn 1.
	Failed   []string       `json:"failed"`
	BadLines []data.BadLine `json:"bad_lines"`
	// CalcAgreement is the share of worked-solution calculator
	// annotations calc reproduces (math only).
	CalcAgreement   *float64 `json:"calc_agreement,omitempty"`
	CalcAnnotations *int     `json:"calc_annotations,omitempty"`
	CalcErrors      *int     `json:"calc_errors,omitempty"`
}

const maxFailedListed = 20

func newDataCheckCmd() *cobra.Command {
	var (
		src    sourceFlags
		split  string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "check",
		Short: "Replay every task's gold solution through its episode and verifier; exit 1 unless all earn reward 1",
		Long: "check replays the gold solution of every task of a domain (--domain, all splits or --split) or of an\n" +
			"imported file (--file and --format) through the task's episode and verifier. Every task must earn\n" +
			"reward 1. For math it also evaluates each calculator annotation of the worked solutions with calc\n" +
			"and reports the share that agrees (calc_agreement). A malformed record fails the check, naming\n" +
			"file:line and field, unless --skip-bad lists it in bad_lines and goes on.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := splitNames(split)
			if err != nil {
				return err
			}
			d, bad, from, err := src.open()
			if err != nil {
				return err
			}
			rep := checkReport{Domain: d.Name(), Source: from, Splits: names, Failures: map[data.FailureKind]int{},
				Failed: []string{}, BadLines: bad}
			if rep.BadLines == nil {
				rep.BadLines = []data.BadLine{}
			}
			var all []data.Task
			for _, sp := range names {
				ts, err := d.Tasks(sp)
				if err != nil {
					return err
				}
				all = append(all, ts...)
			}
			sum, nfail := 0.0, 0
			for _, t := range all {
				res, _, err := data.ReplayGold(d, t)
				if err != nil {
					return err
				}
				sum += res.Reward
				if res.Reward != 1 {
					nfail++
					rep.Failures[res.Failure]++
					if len(rep.Failed) < maxFailedListed {
						rep.Failed = append(rep.Failed, t.ID)
					}
				}
			}
			rep.Tasks = len(all)
			if len(all) > 0 {
				rep.GoldRewardMean = sum / float64(len(all))
			}
			if d.Name() == math.Name {
				a := math.CalcAgreement(all)
				rate := a.Rate()
				rep.CalcAgreement, rep.CalcAnnotations, rep.CalcErrors = &rate, &a.Annotations, &a.Errors
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := printJSON(out, rep); err != nil {
					return err
				}
			} else {
				printCheck(out, rep)
			}
			if nfail > 0 {
				return fmt.Errorf("gold replay earned less than reward 1 on %d of %d %s tasks (first: %s)", nfail, len(all), d.Name(), strings.Join(rep.Failed[:min(3, len(rep.Failed))], ", "))
			}
			return nil
		},
	}
	src.add(c)
	c.Flags().StringVar(&split, "split", "all", "split to check: "+strings.Join(data.Splits, ", ")+", or all")
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}

func printCheck(w io.Writer, r checkReport) {
	from := r.Source.Kind
	switch r.Source.Kind {
	case "file":
		from = fmt.Sprintf("%s (%s, split seed %d)", r.Source.Path, r.Source.Format, r.Source.Seed)
		if r.Source.Format == domains.FormatSplits {
			from = fmt.Sprintf("%s (splits as written)", r.Source.Path)
		}
	case "generated":
		from = fmt.Sprintf("generated, seed %d", r.Source.Seed)
	case "builtin":
		from = fmt.Sprintf("built-in set, seed %d", r.Source.Seed)
	}
	fmt.Fprintf(w, "%s from %s, splits %s\n", r.Domain, from, strings.Join(r.Splits, ", "))
	fmt.Fprintf(w, "tasks: %d\ngold reward mean: %.4f\n", r.Tasks, r.GoldRewardMean)
	if len(r.Failures) > 0 {
		kinds := make([]string, 0, len(r.Failures))
		for k, n := range r.Failures {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "failures: %s (first tasks: %s)\n", strings.Join(kinds, ", "), strings.Join(r.Failed, ", "))
	}
	if r.CalcAgreement != nil {
		fmt.Fprintf(w, "calc agreement: %.4f of %d annotations (%d calc errors)\n", *r.CalcAgreement, *r.CalcAnnotations, *r.CalcErrors)
	}
	if len(r.BadLines) > 0 {
		fmt.Fprintf(w, "skipped %d malformed records:\n", len(r.BadLines))
		for _, b := range r.BadLines {
			fmt.Fprintf(w, "  %v\n", b)
		}
	}
}

func newDataGenerateCmd() *cobra.Command {
	var (
		domain, out string
		seed        uint64
		asJSON      bool
		ladder      bool
		kind        string
		sizesFlag   string
	)
	c := &cobra.Command{
		Use:   "generate",
		Short: "Generate a domain's four splits and write them as jsonl with a hash manifest",
		Long: "generate writes <split>.jsonl (one task a line) for train, val, audit and test, and manifest.json with\n" +
			"each file's sha256, to --out (searchqa also writes corpus.jsonl). The same seed always writes the same\n" +
			"bytes. Without --seed, chess uses the seed of its committed set, so that\n" +
			"'whale data generate --domain chess --out data/chess/splits' reproduces it. Everything is generated\n" +
			"before the first file is written. 'data check --file DIR --format splits' reads the result back.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(domains.Names(), domain) {
				return usageError{fmt.Errorf("unknown or missing --domain %q (want one of %s)", domain, strings.Join(domains.Names(), ", "))}
			}
			if domain == chess.Name && !cmd.Flags().Changed("seed") {
				seed = chess.BuiltinSeed
			}
			if out == "" {
				out = fmt.Sprintf("%s-splits-%d", domain, seed)
			}
			errw := cmd.ErrOrStderr()
			lastPct := -1
			progress := func(done, total int) {
				if total <= 0 {
					return
				}
				if pct := 100 * done / total; pct/5 != lastPct/5 {
					lastPct = pct
					fmt.Fprintf(errw, "generate %s: %d of %d (%d%%)\n", domain, done, total, pct)
				}
			}
			if ladder {
				kind = chessLadder
			}
			var m domains.Manifest
			var err error
			if cmd.Flags().Changed("kind") || ladder || sizesFlag != "" {
				m, err = generateChess(domain, kind, seed, out, sizesFlag, progress)
			} else {
				m, err = domains.Generate(domain, seed, out, progress)
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return printJSON(w, map[string]any{"dir": out, "manifest": m})
			}
			fmt.Fprintf(w, "wrote %s splits (seed %d) to %s\n", domain, seed, out)
			for _, f := range m.Files {
				fmt.Fprintf(w, "  %-16s %5d tasks  sha256 %s\n", f.File, f.Tasks, f.SHA256)
			}
			if m.Corpus != nil {
				fmt.Fprintf(w, "  %-16s %5d docs   sha256 %s\n", m.Corpus.File, m.Corpus.Tasks, m.Corpus.SHA256)
			}
			return nil
		},
	}
	domainFlag(c.Flags(), &domain)
	c.Flags().Uint64Var(&seed, "seed", 1, "generator seed (chess: default "+fmt.Sprint(chess.BuiltinSeed)+", its committed set)")
	c.Flags().StringVar(&out, "out", "", "output directory (default DOMAIN-splits-SEED)")
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	c.Flags().StringVar(&kind, "kind", chessLadder, "chess: the puzzles: "+chessLadder+" (the built-in kind: mate in 1, hanging pieces to take, mate in 2; see chess.GenerateLadder) or "+chessMates+" (mates in 1 and 2 alone, the built-in set before issue 36)")
	c.Flags().BoolVar(&ladder, "ladder", false, "chess: --kind "+chessLadder)
	_ = c.Flags().MarkDeprecated("ladder", "the ladder is the built-in kind now; use --kind")
	c.Flags().StringVar(&sizesFlag, "sizes", "", "chess: TRAIN,VAL,AUDIT,TEST task counts (default the built-in set's)")
	return c
}

// The kinds of generated chess puzzles.
const (
	chessLadder = "ladder"
	chessMates  = "mates"
)

// generateChess writes a chess set of kind (chessLadder or chessMates) to
// out and reads its manifest back as domains.ReadSplits does.
func generateChess(domain, kind string, seed uint64, out, sizesFlag string, progress func(done, total int)) (domains.Manifest, error) {
	if domain != chess.Name {
		return domains.Manifest{}, usageError{fmt.Errorf("--kind and --sizes are for --domain chess, not %s", domain)}
	}
	gen := chess.GenerateLadder
	switch kind {
	case chessLadder:
	case chessMates:
		gen = chess.Generate
	default:
		return domains.Manifest{}, usageError{fmt.Errorf("--kind %q: want %s or %s", kind, chessLadder, chessMates)}
	}
	sizes := chess.BuiltinSizes
	if sizesFlag != "" {
		var n [4]int
		parts := strings.Split(sizesFlag, ",")
		if len(parts) != 4 {
			return domains.Manifest{}, usageError{fmt.Errorf("--sizes %q: want four counts TRAIN,VAL,AUDIT,TEST", sizesFlag)}
		}
		for i, p := range parts {
			v, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || v < 0 {
				return domains.Manifest{}, usageError{fmt.Errorf("--sizes %q: count %d is not a whole number >= 0", sizesFlag, i+1)}
			}
			n[i] = v
		}
		sizes = data.Sizes{Train: n[0], Val: n[1], Audit: n[2], Test: n[3]}
	}
	splits, err := gen(seed, sizes, progress)
	if err != nil {
		return domains.Manifest{}, err
	}
	if err := chess.WriteSplits(out, splits); err != nil {
		return domains.Manifest{}, err
	}
	b, err := os.ReadFile(filepath.Join(out, chess.ManifestFile))
	if err != nil {
		return domains.Manifest{}, fmt.Errorf("read back %s: %w", chess.ManifestFile, err)
	}
	var m domains.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return domains.Manifest{}, fmt.Errorf("read back %s: %w", chess.ManifestFile, err)
	}
	return m, nil
}
