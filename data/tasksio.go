package data

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// WriteTasks writes tasks as JSON lines, one task a line, in order. The
// encoding is stable (struct field order, sorted Hidden keys), so equal
// tasks give equal bytes and HashTasks can compare splits.
func WriteTasks(w io.Writer, tasks []Task) error {
	for i := range tasks {
		b, err := json.Marshal(&tasks[i])
		if err != nil {
			return fmt.Errorf("data: encode task %s: %w", tasks[i].ID, err)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("data: write task %s: %w", tasks[i].ID, err)
		}
	}
	return nil
}

// HashTasks is the hex SHA-256 of tasks as WriteTasks writes them.
func HashTasks(tasks []Task) string {
	h := sha256.New()
	if err := WriteTasks(h, tasks); err != nil {
		panic(err) // a Task always encodes and a hash never fails to write
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ImportSizes returns the split sizes an importer uses for n distinct
// tasks: s when it is set, otherwise DefaultSizes scaled to n with every
// task beyond the evaluation splits going to train, so that no record of
// an imported file is left unused.
func ImportSizes(s Sizes, n int) Sizes {
	if s != (Sizes{}) {
		return s
	}
	out := DefaultSizes.Scaled(n)
	if rest := n - out.Val - out.Audit - out.Test; rest > out.Train {
		out.Train = rest
	}
	return out
}
