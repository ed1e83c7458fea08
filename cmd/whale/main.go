// Command whale is the WHALE workbench: it trains a small model's weights
// and searches the harness around it, alternating the two. This package
// parses flags and wires packages together; it holds no engine logic.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// usageError marks misuse of flags or arguments (exit status 2), as opposed
// to bad input or a failed check (exit status 1).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// commands is filled by init functions of the files that define subcommands,
// so that each subcommand lives in a file of its own.
var commands []func() *cobra.Command

func register(f func() *cobra.Command) { commands = append(commands, f) }

func newRoot() *cobra.Command { return newRootProfiled(new(profiles)) }

// newRootProfiled is newRoot with its --cpuprofile/--memprofile in prof,
// which main ends even when the command fails.
func newRootProfiled(prof *profiles) *cobra.Command {
	root := &cobra.Command{
		Use:           "whale",
		Short:         "Weight-Harness Alternating LEarning workbench",
		Long:          "whale trains a small model's weights and searches the harness around it (prompt, tools,\ncontrol flow, parsing, retries), alternating the two, on one workstation.",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          runDefault,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nrun '%s --help' for usage", err, c.CommandPath())}
	})
	prof.flags(root)
	for _, f := range commands {
		c := f()
		wrapArgs(c)
		root.AddCommand(c)
	}
	return root
}

// wrapArgs turns argument-count errors of c and its children into usage
// errors.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// runDefault is what `whale` with no subcommand does.
func runDefault(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unknown command %q; run 'whale --help'", args[0])}
	}
	return defaultWorkbench(cmd)
}

// gcPercent is the collector's GOGC unless the environment sets one: the
// heap may grow to 1.25× what is live rather than Go's 2×. whale's heap is
// mostly KV caches and activations, float arrays without pointers, which
// a collection does not scan, so collecting more often costs little
// (docs/PERFORMANCE.md, issue 17's memory round).
const gcPercent = 25

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	var prof profiles
	err := newRootProfiled(&prof).Execute()
	if perr := prof.stop(); err == nil {
		err = perr
	}
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "whale:", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		os.Exit(2)
	}
	os.Exit(1)
}

// isCobraUsage recognises the errors cobra itself returns for an unknown
// subcommand, which it does not type.
func isCobraUsage(err error) bool {
	msg := err.Error()
	return len(msg) > 16 && msg[:16] == "unknown command "
}
