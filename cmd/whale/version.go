package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); a build
// from a checkout reports the VCS revision instead.
var version = "dev"

func init() { register(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print whale's version, VCS revision and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rev, modified := buildRevision()
			out := map[string]any{"version": version, "revision": rev, "modified": modified,
				"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			if rev != "" && modified {
				rev += " (modified)"
			}
			if rev == "" {
				rev = "unknown"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "whale %s\nrevision %s\n%s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}

// buildRevision is the VCS revision this binary was built from and
// whether its tree was modified ("" when the build did not record it,
// as with go test).
func buildRevision() (rev string, modified bool) {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	return rev, modified
}
