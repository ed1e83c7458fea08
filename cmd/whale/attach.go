package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"whale/core/attach"
	"whale/core/store"
)

// serveStore serves db to other processes (whale show, whale runs, whale
// tui --run on the same --db) while this one holds it. A socket that
// cannot be served is a warning, not a failure: the work goes on, unwatched.
// The caller closes the server before the store.
func serveStore(cmd *cobra.Command, db *store.DB) *attach.Server {
	srv, err := attach.Serve(db)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "whale: %v; other processes cannot watch %s while this one holds it\n", err, db.Path())
		return nil
	}
	return srv
}

// attachTo returns a client of the process holding path, given the error
// opening path gave; when the store is not held, or its holder serves no
// socket (an older whale), it returns that error as it was.
func attachTo(path string, openErr error) (*attach.Client, error) {
	if !errors.Is(openErr, store.ErrInUse) {
		return nil, openErr
	}
	cl, err := attach.Dial(path)
	if err != nil {
		return nil, fmt.Errorf("%w (and it answers no requests on its socket: %v)", openErr, err)
	}
	return cl, nil
}

// liveRunIDs lists the runs the owner runs now, for a hint.
func liveRunIDs(cl *attach.Client) string {
	runs, err := cl.Runs()
	if err != nil {
		return err.Error()
	}
	var ids []string
	for _, r := range runs {
		if r.Live {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return "none running now"
	}
	return "running now: " + strings.Join(ids, ", ")
}
