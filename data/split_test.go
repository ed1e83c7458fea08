package data

import (
	"fmt"
	"testing"
)

func TestSplitTasksDeterministicAndDisjoint(t *testing.T) {
	var tasks []Task
	for i := 0; i < 100; i++ {
		tasks = append(tasks, Task{ID: fmt.Sprint(i), Problem: fmt.Sprint("p", i%90)}) // 10 duplicates
	}
	sizes := Sizes{Train: 60, Val: 10, Audit: 5, Test: 20}
	a, err := SplitTasks(tasks, 7, sizes)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SplitTasks(tasks, 7, sizes)
	c, _ := SplitTasks(tasks, 8, sizes)
	seen := map[string]string{}
	for _, name := range Splits {
		for i, task := range a[name] {
			if b[name][i].ID != task.ID {
				t.Fatalf("split %s differs between two calls with one seed", name)
			}
			if prev, ok := seen[task.Problem]; ok {
				t.Fatalf("problem %q in both %s and %s", task.Problem, prev, name)
			}
			seen[task.Problem] = name
		}
	}
	if len(seen) != 90 {
		t.Fatalf("%d distinct problems dealt, want 90 (sizes scaled to fit)", len(seen))
	}
	same := true
	for i := range a[SplitVal] {
		same = same && a[SplitVal][i].ID == c[SplitVal][i].ID
	}
	if same {
		t.Fatal("a different seed gave the same val split")
	}
	if len(a[SplitVal]) != 9 || len(a[SplitTest]) != 18 {
		t.Fatalf("scaled sizes val %d test %d, want 9 and 18", len(a[SplitVal]), len(a[SplitTest]))
	}
}
