package main

import (
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"whale/core/basemodel"
	"whale/core/chat"
	"whale/core/engine"
	"whale/core/policy"
	"whale/data"
	"whale/data/chess"
	"whale/data/domains"
	"whale/harnesses"
)

func init() { register(newHarnessCmd) }

func newHarnessCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "harness",
		Short: "Check, run and compare Starlark harnesses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	c.AddCommand(newHarnessCheckCmd(), newHarnessRunCmd(), newHarnessDiffCmd())
	return c
}

// readHarnessSource returns the source of FILE, or of the built-in harness of
// that name (h0) for domain when no such file exists.
func readHarnessSource(arg, domain string) (name, src string, err error) {
	b, ferr := os.ReadFile(arg)
	if ferr == nil {
		return arg, string(b), nil
	}
	if !errors.Is(ferr, os.ErrNotExist) || strings.ContainsAny(arg, "/.") {
		return "", "", fmt.Errorf("read harness %s: %w", arg, ferr)
	}
	if domain == "" {
		return "", "", usageError{fmt.Errorf("%s is not a file; naming a built-in harness needs --domain", arg)}
	}
	src, err = harnesses.Builtin(domain, arg)
	if err != nil {
		return "", "", fmt.Errorf("%s is neither a file nor a built-in harness: %w", arg, err)
	}
	return domain + "/" + arg + ".star", src, nil
}

// dataFlags are --data FILE --format F: a person's own tasks instead of
// the domain's generated splits, for every command that runs tasks.
type dataFlags struct{ path, format, themes string }

func (f *dataFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.path, "data", "", dataUsage)
	formatFlag(fs, &f.format)
	fs.StringVar(&f.themes, "themes", "", "with --format lichess: keep only puzzles with one of these comma-separated themes (e.g. mateIn1,hangingPiece)")
}

// openHarnessDomain opens domain name with seed, or the tasks of --data
// (which must hold name's tasks).
func openHarnessDomain(name string, seed uint64, df dataFlags) (data.Domain, error) {
	if name == "" {
		return nil, usageError{fmt.Errorf("--domain is required (one of %s)", strings.Join(domains.Names(), ", "))}
	}
	if !slices.Contains(domains.Names(), name) {
		return nil, usageError{fmt.Errorf("unknown --domain %q (want one of %s)", name, strings.Join(domains.Names(), ", "))}
	}
	if (df.path == "") != (df.format == "") {
		return nil, usageError{errors.New("--data and --format go together")}
	}
	if df.themes != "" {
		return openThemed(name, seed, df)
	}
	d, err := runDomain(name, df.path, df.format, seed)
	if err != nil {
		return nil, fmt.Errorf("open domain %s: %w", name, err)
	}
	return d, nil
}

// openThemed imports --data keeping the puzzles with one of --themes, and
// reports on stderr how many puzzles carry each theme asked for.
func openThemed(name string, seed uint64, df dataFlags) (data.Domain, error) {
	if df.format != domains.FormatLichess {
		return nil, usageError{fmt.Errorf("--themes needs --data FILE --format %s", domains.FormatLichess)}
	}
	themes := splitThemes(df.themes)
	d, _, err := domains.Import(df.format, df.path, data.ImportOptions{Seed: seed, Themes: themes})
	if err != nil {
		return nil, fmt.Errorf("open domain %s: %w", name, err)
	}
	if d.Name() != name {
		return nil, fmt.Errorf("--data %s holds %s tasks, not %s", df.path, d.Name(), name)
	}
	reportThemes(os.Stderr, d, themes)
	return d, nil
}

// splitThemes reads a comma-separated --themes value.
func splitThemes(s string) []string {
	var out []string
	for _, th := range strings.Split(s, ",") {
		if th = strings.TrimSpace(th); th != "" {
			out = append(out, th)
		}
	}
	return out
}

// reportThemes writes "themes: mateIn1 412, hangingPiece 230 (640 puzzles)".
func reportThemes(w io.Writer, d data.Domain, themes []string) {
	counts, err := chess.ThemeCounts(d, themes)
	if err != nil {
		return
	}
	total := 0
	for _, sp := range data.Splits {
		ts, _ := d.Tasks(sp)
		total += len(ts)
	}
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprintf("%s %d", c.Theme, c.Tasks)
	}
	fmt.Fprintf(w, "themes: %s (%d puzzles kept)\n", strings.Join(parts, ", "), total)
}

// harnessCheckReport is `harness check --json` output.
type harnessCheckReport struct {
	File   string                `json:"file"`
	Domain string                `json:"domain"`
	Valid  bool                  `json:"valid"`
	Hash   string                `json:"hash,omitempty"`
	Issues []harnesses.Issue     `json:"issues,omitempty"`
	Knobs  []harnesses.Knob      `json:"knobs,omitempty"`
	Space  []harnesses.Dimension `json:"search_space,omitempty"`
	Frags  []harnesses.Fragment  `json:"fragments,omitempty"`
	// Audit is the null-policy audit's verdict (--audit).
	Audit *engine.NullAudit `json:"audit,omitempty"`
}

func newHarnessCheckCmd() *cobra.Command {
	var domain string
	var seed uint64
	var asJSON, audit bool
	var auditTasks int
	c := &cobra.Command{
		Use:   "check FILE|h0 --domain D",
		Short: "Validate a harness against a domain; print its knobs and search space",
		Long: "Parses, lints, runs the top level of and validates a harness (contract names and types, budgets in range,\n" +
			"tools the domain offers, every SEARCH_SPACE choice held to the same rules). A valid harness prints its\n" +
			"hash, knobs and search space; an invalid one prints file:line:col messages and exits with status 1.\n" +
			"With --audit it also runs the null-policy audit a run applies to every incumbent (content-blind\n" +
			"policies through the harness and through h0 on the audit split; no model) and exits with status 1\n" +
			"when the audit refuses it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if auditTasks < 0 {
				return usageError{fmt.Errorf("--audit-tasks %d: want 0 (the run's 128) or more", auditTasks)}
			}
			d, err := openHarnessDomain(domain, seed, dataFlags{})
			if err != nil {
				return err
			}
			name, src, err := readHarnessSource(args[0], domain)
			if err != nil {
				return err
			}
			rep := harnessCheckReport{File: name, Domain: domain}
			h, err := harnesses.Load(name, src, harnesses.EnvOf(d))
			var le *harnesses.LoadError
			switch {
			case errors.As(err, &le):
				rep.Issues = le.Issues
			case err != nil:
				return err
			default:
				rep.Valid, rep.Hash, rep.Knobs, rep.Space, rep.Frags = true, h.Hash, h.Knobs(), h.SearchSpace(), h.Fragments()
			}
			if rep.Valid && audit {
				a, ok, err := engine.AuditHarness(cmd.Context(), d, basemodel.Tokenizer(), h, auditTasks, 1)
				if err != nil {
					return err
				}
				if ok {
					rep.Audit = &a
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s has no null policy: nothing to audit\n", domain)
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := printJSON(out, rep); err != nil {
					return err
				}
			} else if rep.Valid {
				printHarnessCheck(out, rep)
				if rep.Audit != nil {
					fmt.Fprintf(out, "\naudit: %s\n", rep.Audit.Sentence())
				}
			}
			if !rep.Valid {
				return fmt.Errorf("%s is not a valid %s harness (%d issues):\n%w", name, domain, len(le.Issues), le)
			}
			if rep.Audit != nil && rep.Audit.Refused {
				return errors.New(rep.Audit.Sentence())
			}
			return nil
		},
	}
	domainFlag(c.Flags(), &domain)
	c.Flags().Uint64Var(&seed, "seed", 1, "seed of the domain")
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	c.Flags().BoolVar(&audit, "audit", false, "also run the null-policy audit (exit status 1 when it refuses the harness)")
	c.Flags().IntVar(&auditTasks, "audit-tasks", 0, "audit on the first N tasks of the audit split (0: the run's 128)")
	return c
}

func printHarnessCheck(w io.Writer, rep harnessCheckReport) {
	fmt.Fprintf(w, "%s: valid %s harness\nhash %s\n\nknobs:\n", rep.File, rep.Domain, rep.Hash)
	for _, k := range rep.Knobs {
		fmt.Fprintf(w, "  %-22s = %s\n", k.Name, harnessOneLine(k.Source))
	}
	fmt.Fprintf(w, "\nsearch space (%d knobs):\n", len(rep.Space))
	for _, d := range rep.Space {
		kind := "value"
		if d.Fragment {
			kind = "fragment"
		}
		choices := make([]string, len(d.Choices))
		for i, c := range d.Choices {
			choices[i] = harnessOneLine(c)
			if c == d.Current {
				choices[i] = "*" + choices[i]
			}
		}
		if d.Range != nil {
			choices = []string{d.Range.String() + ", now *" + d.Current}
		}
		fmt.Fprintf(w, "  %-22s %-8s %s\n", d.Knob, kind, strings.Join(choices, " | "))
	}
	if len(rep.Frags) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfragments (%d):\n", len(rep.Frags))
	for _, f := range rep.Frags {
		line := fmt.Sprintf("  %-26s targets %s", f.Key, strings.Join(f.Targets, ", "))
		for _, r := range f.Requires {
			line += "; requires " + r.String()
		}
		fmt.Fprintln(w, line)
	}
}

func harnessOneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return s
}

// harnessRunReport is `harness run --json` output.
type harnessRunReport struct {
	File     string         `json:"file"`
	Hash     string         `json:"hash"`
	Domain   string         `json:"domain"`
	Split    string         `json:"split"`
	Policy   string         `json:"policy"`
	Tasks    int            `json:"tasks"`
	Rollouts int            `json:"rollouts"`
	Calls    int            `json:"policy_calls"`
	Mean     float64        `json:"mean_reward"`
	Failures map[string]int `json:"failures"`
	// Errors holds the first harness errors (file:line:col), if any.
	Errors []string `json:"harness_errors,omitempty"`
}

func newHarnessRunCmd() *cobra.Command {
	var domain, split, pol string
	var n, k, maxNew int
	var seed uint64
	var temp float64
	var asJSON bool
	var server serverFlags
	var df dataFlags
	c := &cobra.Command{
		Use:   "run FILE|h0 --domain D --policy oracle|random",
		Short: "Run a harness on a domain's tasks with a checking policy; print mean reward and failures",
		Long: "Runs N tasks of a split through the harness with a checking policy: oracle answers the gold action\n" +
			"in the built-in format (a correct harness scores 1.0), random emits random text with the tags\n" +
			"harnesses parse (a sound harness scores near 0). Prints the mean reward and counts by failure kind.\n" +
			"With --policy-url URL --policy-model NAME an OpenAI-compatible server is the policy instead, sampling\n" +
			"at --temperature.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 {
				return usageError{fmt.Errorf("--n must be at least 1, got %d", n)}
			}
			if k < 1 {
				return usageError{fmt.Errorf("--k must be at least 1, got %d", k)}
			}
			if !slices.Contains(data.Splits, split) {
				return usageError{fmt.Errorf("unknown --split %q (want one of %s)", split, strings.Join(data.Splits, ", "))}
			}
			d, err := openHarnessDomain(domain, seed, df)
			if err != nil {
				return err
			}
			if err := server.check(cmd.Flags()); err != nil {
				return err
			}
			if !(temp >= 0) {
				return usageError{fmt.Errorf("--temperature %v must be ≥ 0", temp)}
			}
			p, pol, err := checkingPolicy(cmd.Flags(), server, pol, d, seed)
			if err != nil {
				return err
			}
			name, src, err := readHarnessSource(args[0], domain)
			if err != nil {
				return err
			}
			h, err := harnesses.Load(name, src, harnesses.EnvOf(d))
			if err != nil {
				return err
			}
			tasks, err := d.Tasks(split)
			if err != nil {
				return err
			}
			if len(tasks) > n {
				tasks = tasks[:n]
			}
			ctx, stop := interruptible(cmd.Context())
			defer stop()
			ts, err := harnesses.Run(ctx, h, d, tasks, p, harnesses.RunOptions{Seed: seed, K: k, Temperature: float32(temp), MaxNewTokens: maxNew, KeyPrefix: split + "/"})
			if err != nil {
				return err
			}
			rep := harnessRunReport{File: name, Hash: h.Hash, Domain: domain, Split: split, Policy: pol, Tasks: len(tasks)}
			rep.add(ts)
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, rep)
			}
			fmt.Fprintf(out, "%s (%s) on %s/%s with the %s policy\n", rep.File, rep.Hash[:12], domain, split, pol)
			fmt.Fprintf(out, "tasks %d, rollouts %d, policy calls %d\nmean reward %.4f\n", rep.Tasks, rep.Rollouts, rep.Calls, rep.Mean)
			printFailures(out, rep.Failures, rep.Errors)
			return nil
		},
	}
	f := c.Flags()
	domainFlag(f, &domain)
	f.StringVar(&pol, "policy", "oracle", "checking policy: oracle or random")
	f.StringVar(&split, "split", data.SplitVal, "split to draw tasks from: "+strings.Join(data.Splits, ", "))
	f.IntVar(&n, "n", 200, "number of tasks (the first N of the split)")
	f.IntVar(&k, "k", 1, "samples per task")
	f.IntVar(&maxNew, "max-new-tokens", 256, "completion length bound")
	f.Uint64Var(&seed, "seed", 1, "seed of the domain and of the policy's requests")
	f.Float64Var(&temp, "temperature", 1, "with --policy-url: sampling temperature (0 = greedy)")
	jsonFlag(f, &asJSON, jsonObject)
	server.register(f)
	df.register(f)
	return c
}

// checkingPolicy is whale harness run's policy: the server's, or the
// oracle or random checking policy; it returns the policy's name too.
func checkingPolicy(flags *pflag.FlagSet, server serverFlags, pol string, d data.Domain, seed uint64) (policy.Policy, string, error) {
	switch {
	case server.set() && flags.Changed("policy"):
		return nil, "", usageError{fmt.Errorf("--policy-url makes the server the policy: drop --policy %s", pol)}
	case server.set():
		p, err := server.policy(seed)
		return p, server.name(), err
	case flags.Changed("temperature"):
		return nil, "", usageError{fmt.Errorf("--temperature needs --policy-url: the checking policies do not sample")}
	case pol != "oracle" && pol != "random":
		return nil, "", usageError{fmt.Errorf("unknown --policy %q (want oracle or random)", pol)}
	}
	p, err := scriptedPolicy(pol, d)
	return p, pol, err
}

// add counts the trajectories into the report: rollouts, calls, mean
// reward, failures by kind and the first harness errors.
func (rep *harnessRunReport) add(ts []harnesses.Trajectory) {
	rep.Rollouts, rep.Failures = len(ts), map[string]int{}
	sum := 0.0
	for _, tr := range ts {
		sum += tr.Reward
		rep.Calls += tr.ModelCalls()
		if tr.Failure != data.FailNone {
			rep.Failures[string(tr.Failure)]++
		}
		if tr.Error != "" && len(rep.Errors) < 5 {
			rep.Errors = append(rep.Errors, tr.TaskID+": "+tr.Error)
		}
	}
	if len(ts) > 0 {
		rep.Mean = sum / float64(len(ts))
	}
}

func newHarnessDiffCmd() *cobra.Command {
	var domain string
	var asJSON bool
	c := &cobra.Command{
		Use:   "diff A B",
		Short: "Line diff of two harnesses' normalised sources, with their hashes",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			na, a, err := readHarnessSource(args[0], domain)
			if err != nil {
				return err
			}
			nb, b, err := readHarnessSource(args[1], domain)
			if err != nil {
				return err
			}
			d := harnesses.Diff(na, a, nb, b)
			ha, hb := harnesses.Hash(a), harnesses.Hash(b)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"a": na, "b": nb, "hash_a": ha, "hash_b": hb, "same": ha == hb, "diff": d})
			}
			_, err = io.WriteString(cmd.OutOrStdout(), d)
			return err
		},
	}
	c.Flags().StringVar(&domain, "domain", "", "domain of built-in harnesses named instead of files (h0)")
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}

// scriptedPolicy is the oracle or the random policy ("oracle", "random")
// of d, in the embedded model's tokens, so that what a report counts in
// tokens is counted as for the model.
func scriptedPolicy(name string, d data.Domain) (policy.Policy, error) {
	tmpl, err := chat.NewTemplate(basemodel.Tokenizer())
	if err != nil {
		return nil, err
	}
	if name == "oracle" {
		return chat.Tokenize(harnesses.NewOracle(d), tmpl), nil
	}
	return chat.Tokenize(harnesses.NewRandom(), tmpl), nil
}
