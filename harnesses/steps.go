package harnesses

import (
	"fmt"
	"math/bits"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Byte-charged builtins. An operation that compares, hashes, sorts or
// renders values scans their bytes, not just their top-level elements: a
// list of 65,536 references to one 256 KB string is one interpreter value
// whose comparison reads 16 GB. Such operations are charged by the bytes
// they may scan (one step per 16, as charge does), measured before the
// work is done, and refused at once when the charge would pass the
// thread's step limit: whether a harness stops depends on what it does,
// never on the machine's speed.

// renderCost is what str and repr are charged per byte of the value they
// render, in scanned bytes: formatting a nested value costs several times
// a comparison's read of it (measured on lists of short strings).
const renderCost = 4

// maxStepsKey is the thread-local under which newThread records the
// thread's step limit, so a builtin can refuse work the limit cannot pay
// for before doing it.
const maxStepsKey = "whale.max_steps"

// budgetBytes is the number of bytes the thread's remaining steps pay for
// (plus one, so that a scan stopping at it is known to be over).
func budgetBytes(thread *starlark.Thread) int {
	max, ok := thread.Local(maxStepsKey).(uint64)
	if !ok {
		return MaxValueBytes * 64
	}
	if thread.Steps >= max {
		return 1
	}
	left := (max - thread.Steps) * 16
	if left > 1<<40 {
		return 1 << 40
	}
	return int(left) + 1
}

// chargeBytes charges the scanning of n bytes by what and fails, naming
// the step limit, when the thread's steps cannot pay for it.
func chargeBytes(thread *starlark.Thread, what string, n int) error {
	charge(thread, n)
	if max, ok := thread.Local(maxStepsKey).(uint64); ok && thread.Steps > max {
		return fmt.Errorf("too many steps: %s would scan about %d bytes, past the step limit of %d", what, n, max)
	}
	return nil
}

// scanBytes is what comparing, hashing or rendering v may read: the
// length of each string or bytes value and 16 per other value, through
// nested lists, tuples and dicts (a value referenced twice counts twice,
// as a comparison reads it twice). It stops once past limit; its own work
// is proportional to what it returns.
func scanBytes(v starlark.Value, limit int) int {
	return walkBytes(v, limit, scanCosts)
}

// valueCosts are what walkBytes adds for each kind of value beside a
// string's or bytes' length.
type valueCosts struct {
	scalar, list, tuple, dict int
	// intBits adds an Int's bytes (its memory) instead of scalar alone.
	intBits bool
}

var (
	// scanCosts: what an operation reads.
	scanCosts = valueCosts{scalar: 16, list: 16, tuple: 16, dict: 16}
	// memCosts: what a value holds in memory (sizeOf).
	memCosts = valueCosts{scalar: 16, list: 24, tuple: 24, dict: 48, intBits: true}
)

// walkBytes sums c over v and everything nested in it (lists, tuples,
// dicts; depth at most 64), stopping once the sum passes limit, so that
// cyclic or shared structures cost at most limit to measure.
func walkBytes(v starlark.Value, limit int, c valueCosts) int {
	n := 0
	var walk func(v starlark.Value, depth int)
	walk = func(v starlark.Value, depth int) {
		if n > limit {
			return
		}
		if depth > 64 {
			n = limit + 1
			return
		}
		switch v := v.(type) {
		case starlark.String:
			n += len(v) + 16
		case starlark.Bytes:
			n += len(v) + 16
		case starlark.Int:
			n += c.scalar
			if c.intBits {
				n += v.BigInt().BitLen() / 8
			}
		case *starlark.List:
			n += c.list
			for i := 0; i < v.Len() && n <= limit; i++ {
				walk(v.Index(i), depth+1)
			}
		case starlark.Tuple:
			n += c.tuple
			for _, x := range v {
				if n > limit {
					return
				}
				walk(x, depth+1)
			}
		case *starlark.Dict:
			n += c.dict
			for _, kv := range v.Items() {
				if n > limit {
					return
				}
				walk(kv[0], depth+1)
				walk(kv[1], depth+1)
			}
		default:
			n += c.scalar
		}
	}
	walk(v, 0)
	return n
}

// compareBytes bounds what comparing x with y by op reads: a membership
// test in a string reads both strings, in a dict hashes x, in a sequence
// compares x with every element (at most the sequence's bytes); an
// equality or ordering reads at most the smaller operand, nothing when
// their types differ.
func compareBytes(thread *starlark.Thread, op syntax.Token, x, y starlark.Value) int {
	limit := budgetBytes(thread)
	switch op {
	case syntax.IN, syntax.NOT_IN:
		switch y := y.(type) {
		case starlark.String:
			return len(y) + strLenOf(x)
		case *starlark.Dict:
			return scanBytes(x, limit)
		case *starlark.List, starlark.Tuple:
			return scanBytes(y, limit) + scanBytes(x, limit)
		}
		return 16
	}
	if x.Type() != y.Type() {
		return 16
	}
	nx := scanBytes(x, limit)
	return min(nx, scanBytes(y, nx))
}

func strLenOf(v starlark.Value) int {
	if s, ok := v.(starlark.String); ok {
		return len(s)
	}
	return 16
}

// log2Ceil is ⌈log₂ n⌉ for n ≥ 1 (0 for n ≤ 1): the comparisons a sort
// makes per element.
func log2Ceil(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// guardScan shadows a universe builtin that compares or hashes its
// arguments' contents (sorted, max, min, hash): it charges their bytes
// (times log₂ n for sorted) before the builtin runs.
func guardScan(name string, inner *starlark.Builtin) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		n := 0
		limit := budgetBytes(thread)
		for _, a := range args {
			n += scanBytes(a, limit)
		}
		if name == "sorted" && len(args) > 0 {
			if l := starlark.Len(args[0]); l > 1 {
				n *= log2Ceil(l)
			}
		}
		if err := chargeBytes(thread, name, n); err != nil {
			return nil, err
		}
		return starlark.Call(thread, inner, args, kwargs)
	})
}

// checkedKey charges the hashing of a dict key (d[k], d[k] = v, {k: v})
// by its bytes.
func checkedKey(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	k := args[0]
	switch k.(type) {
	case starlark.Int, starlark.Bool, starlark.NoneType, starlark.Float:
		return k, nil
	}
	if err := chargeBytes(thread, "a dict key", scanBytes(k, budgetBytes(thread))); err != nil {
		return nil, err
	}
	return k, nil
}

// scanningMethods are methods whose work grows with the bytes of their
// arguments (the key hashed, the value compared with every element):
// they are charged by those bytes, and by the receiver's for list.index
// and list.remove.
var scanningMethods = map[string]bool{"get": true, "pop": true, "setdefault": true, "index": true, "remove": true}

// chargeMethod charges a scanning method's call before it runs.
func chargeMethod(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple) error {
	limit := budgetBytes(thread)
	n := 0
	for _, a := range args {
		n += scanBytes(a, limit)
	}
	if _, isList := recv.(*starlark.List); isList && (name == "index" || name == "remove") {
		n += scanBytes(recv, limit)
	}
	return chargeBytes(thread, "."+name, n)
}
