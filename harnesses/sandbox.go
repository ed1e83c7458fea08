package harnesses

import (
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Limits of the sandbox. Every limit that can change a rollout's outcome
// counts Starlark steps or sizes, never time.
const (
	// LoadSteps bounds the execution of a harness's top-level code.
	LoadSteps = 2_000_000
	// CallSteps bounds each call of a harness function.
	CallSteps = 1_000_000
	// MaxString bounds the length in bytes of any string the sandbox's
	// checked operators and builtins produce. Prompts are rendered by the
	// runtime, not built by harnesses, so this is far above what a
	// harness needs.
	MaxString = 256 << 10
	// MaxElems bounds the length of any list, tuple or dict the checked
	// operators and builtins produce, and of any iteration a builtin does.
	MaxElems = 1 << 16
	// MaxValueBytes bounds the total size of a value a harness function
	// returns and of the per-episode state it keeps.
	MaxValueBytes = 1 << 21
	// MaxIntBits bounds integers produced by multiplication.
	MaxIntBits = 4096
	// maxSourceBytes bounds the harness source itself.
	maxSourceBytes = 256 << 10
)

// WallGuard is a safety net far above any normal call: the step limits stop
// runaway code long before it. Reaching it is logged as an error because it
// means a builtin escaped step accounting.
var WallGuard = 20 * time.Second

// fileOptions is the Starlark dialect harnesses are written in: no
// recursion, no reassignment of globals (so every top-level name has one
// definition, which Mutate relies on), while loops allowed because steps
// bound them.
var fileOptions = &syntax.FileOptions{While: true, TopLevelControl: true}

// Names of the checked operators the rewriter substitutes. The lint rejects
// any identifier with this prefix in a harness so that none can be shadowed.
const guardPrefix = "_whale_"

var guardedMethods = map[string]bool{"join": true, "replace": true, "format": true, "extend": true, "update": true,
	"get": true, "pop": true, "setdefault": true, "index": true, "remove": true}

// rewriteFile replaces, before resolution, every +, *, % (and their
// augmented forms) by calls of checked builtins, and every access to a
// method that can multiply sizes by a checked accessor, so that a harness
// cannot build giant values in a few steps.
func rewriteFile(f *syntax.File) {
	for i, s := range f.Stmts {
		f.Stmts[i] = rwStmt(s)
	}
}

func rwStmts(ss []syntax.Stmt) []syntax.Stmt {
	for i, s := range ss {
		ss[i] = rwStmt(s)
	}
	return ss
}

func rwStmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.RHS = rwExpr(s.RHS)
		if name, ok := augmented[s.Op]; ok {
			// x op= y  ->  x = _whale_iop(x, y): the checked builtin
			// mutates a list in place, as op= does, so aliasing is kept.
			read := cloneTarget(s.LHS)
			s.LHS = rwTarget(s.LHS)
			s.RHS = guardCall(s.OpPos, name, read, s.RHS)
			s.Op = syntax.EQ
		} else {
			s.LHS = rwTarget(s.LHS)
		}
	case *syntax.DefStmt:
		for i, p := range s.Params {
			s.Params[i] = rwExpr(p)
		}
		s.Body = rwStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rwExpr(s.X)
	case *syntax.IfStmt:
		s.Cond = rwExpr(s.Cond)
		s.True = rwStmts(s.True)
		s.False = rwStmts(s.False)
	case *syntax.ForStmt:
		s.X = rwExpr(s.X)
		s.Body = rwStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rwExpr(s.Cond)
		s.Body = rwStmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rwExpr(s.Result)
		}
	}
	return s
}

var augmented = map[syntax.Token]string{
	syntax.PLUS_EQ:    guardPrefix + "iadd",
	syntax.STAR_EQ:    guardPrefix + "imul",
	syntax.PERCENT_EQ: guardPrefix + "mod",
	syntax.LTLT_EQ:    guardPrefix + "lshift",
}

// binaryGuards are operators whose cost or result size depends on their
// operands: sizes are checked, and work on strings and sequences is
// charged as steps (comparisons and "in" scan their operands).
var binaryGuards = map[syntax.Token]string{
	syntax.PLUS:    guardPrefix + "add",
	syntax.STAR:    guardPrefix + "mul",
	syntax.PERCENT: guardPrefix + "mod",
	syntax.LTLT:    guardPrefix + "lshift",
	syntax.IN:      guardPrefix + "in",
	syntax.NOT_IN:  guardPrefix + "not_in",
	syntax.EQL:     guardPrefix + "eq",
	syntax.NEQ:     guardPrefix + "ne",
	syntax.LT:      guardPrefix + "lt",
	syntax.LE:      guardPrefix + "le",
	syntax.GT:      guardPrefix + "gt",
	syntax.GE:      guardPrefix + "ge",
}

// rwTarget rewrites the sub-expressions of an assignment target, which
// are reads (indices, receivers) even though the target itself is written.
func rwTarget(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X = rwExpr(e.X)
		e.Y = keyCall(rwExpr(e.Y))
	case *syntax.TupleExpr:
		for i, x := range e.List {
			e.List[i] = rwTarget(x)
		}
	case *syntax.ListExpr:
		for i, x := range e.List {
			e.List[i] = rwTarget(x)
		}
	case *syntax.ParenExpr:
		e.X = rwTarget(e.X)
	case *syntax.DotExpr:
		e.X = rwExpr(e.X)
	}
	return e
}

// cloneTarget copies an augmented-assignment target for its read side, so
// that the resolver sees distinct identifier nodes for the use and the
// binding.
func cloneTarget(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: e.NamePos, Name: e.Name}
	case *syntax.IndexExpr:
		return &syntax.IndexExpr{X: cloneTarget(e.X), Lbrack: e.Lbrack, Y: e.Y, Rbrack: e.Rbrack}
	case *syntax.DotExpr:
		return &syntax.DotExpr{X: cloneTarget(e.X), Dot: e.Dot, NamePos: e.NamePos, Name: &syntax.Ident{NamePos: e.Name.NamePos, Name: e.Name.Name}}
	case *syntax.ParenExpr:
		return &syntax.ParenExpr{Lparen: e.Lparen, X: cloneTarget(e.X), Rparen: e.Rparen}
	}
	return e
}

// keyCall wraps an index or dict key in the checked key charge (see
// checkedKey); literal ints need none.
func keyCall(e syntax.Expr) syntax.Expr {
	if l, ok := e.(*syntax.Literal); ok && l.Token == syntax.INT {
		return e
	}
	return guardCall(syntax.Start(e), guardPrefix+"key", e)
}

func guardCall(pos syntax.Position, name string, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: pos}
}

func rwExprs(es []syntax.Expr) {
	for i, e := range es {
		es[i] = rwExpr(e)
	}
}

func rwExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *syntax.BinaryExpr:
		e.X = rwExpr(e.X)
		e.Y = rwExpr(e.Y)
		if name, ok := binaryGuards[e.Op]; ok {
			return guardCall(e.OpPos, name, e.X, e.Y)
		}
	case *syntax.CallExpr:
		e.Fn = rwExpr(e.Fn)
		for i, a := range e.Args {
			// A keyword argument is a BinaryExpr with Op EQ; only its
			// value is an expression.
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				b.Y = rwExpr(b.Y)
				continue
			}
			e.Args[i] = rwExpr(a)
		}
	case *syntax.DotExpr:
		// Every attribute goes through the checked accessor: it charges
		// methods of strings and sequences by the receiver's length and
		// wraps the methods that can multiply sizes.
		e.X = rwExpr(e.X)
		lit := &syntax.Literal{Token: syntax.STRING, TokenPos: e.NamePos, Raw: fmt.Sprintf("%q", e.Name.Name), Value: e.Name.Name}
		return guardCall(e.Dot, guardPrefix+"attr", e.X, lit)
	case *syntax.ParenExpr:
		e.X = rwExpr(e.X)
	case *syntax.UnaryExpr:
		e.X = rwExpr(e.X)
	case *syntax.IndexExpr:
		e.X = rwExpr(e.X)
		e.Y = keyCall(rwExpr(e.Y))
	case *syntax.SliceExpr:
		e.X = guardCall(e.Lbrack, guardPrefix+"charge", rwExpr(e.X))
		e.Lo = rwExpr(e.Lo)
		e.Hi = rwExpr(e.Hi)
		e.Step = rwExpr(e.Step)
	case *syntax.ListExpr:
		rwExprs(e.List)
	case *syntax.TupleExpr:
		rwExprs(e.List)
	case *syntax.DictExpr:
		for _, x := range e.List {
			if d, ok := x.(*syntax.DictEntry); ok {
				d.Key = keyCall(rwExpr(d.Key))
				d.Value = rwExpr(d.Value)
			}
		}
	case *syntax.CondExpr:
		e.Cond = rwExpr(e.Cond)
		e.True = rwExpr(e.True)
		e.False = rwExpr(e.False)
	case *syntax.LambdaExpr:
		rwExprs(e.Params)
		e.Body = rwExpr(e.Body)
	case *syntax.DictEntry:
		e.Key = keyCall(rwExpr(e.Key))
		e.Value = rwExpr(e.Value)
	case *syntax.Comprehension:
		e.Body = rwExpr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.X = rwExpr(c.X)
			case *syntax.IfClause:
				c.Cond = rwExpr(c.Cond)
			}
		}
	}
	return e
}

// charge adds work done inside a builtin to the thread's step count, so
// that builtins cannot do unbounded work for one interpreter step. One step
// per 16 bytes scanned puts a builtin's work on the scale of an
// interpreter step (tens of nanoseconds), so the step limits bound time.
func charge(thread *starlark.Thread, n int) {
	if n > 0 {
		thread.Steps += uint64(n)/16 + 1
	}
}

// cost is the length of a string or sequence, the work an operation that
// scans it does; other values cost nothing extra.
func cost(v starlark.Value) int {
	switch v := v.(type) {
	case starlark.String:
		return len(v)
	case starlark.Bytes:
		return len(v)
	case *starlark.List:
		return v.Len() * 8
	case starlark.Tuple:
		return len(v) * 8
	case *starlark.Dict:
		return v.Len() * 8
	}
	return 0
}

func checkedCharge(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	charge(thread, cost(args[0]))
	return args[0], nil
}

func checkedCompare(op syntax.Token) func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		if err := chargeBytes(thread, "operator "+op.String(), compareBytes(thread, op, x, y)); err != nil {
			return nil, err
		}
		if op == syntax.IN || op == syntax.NOT_IN {
			return starlark.Binary(op, x, y)
		}
		ok, err := starlark.Compare(op, x, y)
		if err != nil {
			return nil, err
		}
		return starlark.Bool(ok), nil
	}
}

func checkedLshift(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if xi, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok {
			if n, ok := yi.Int64(); ok && n > 0 && int64(xi.BigInt().BitLen())+n > MaxIntBits {
				return nil, sizeErr("integer (bits)", xi.BigInt().BitLen()+int(n), MaxIntBits)
			}
		}
	}
	return starlark.Binary(syntax.LTLT, x, y)
}

// sizeOf estimates the memory a value holds, stopping as soon as the
// estimate passes limit (so cyclic or shared structures cost at most limit
// to measure).
func sizeOf(v starlark.Value, limit int) int {
	return walkBytes(v, limit, memCosts)
}

func strLen(v starlark.Value) int {
	if s, ok := v.(starlark.String); ok {
		return len(s)
	}
	return sizeOf(v, MaxString)
}

func seqLen(v starlark.Value) (int, bool) {
	switch v.(type) {
	case *starlark.List, starlark.Tuple:
		return starlark.Len(v), true
	}
	return 0, false
}

func sizeErr(what string, n, max int) error {
	return fmt.Errorf("%s would be %d long, over the sandbox limit of %d", what, n, max)
}

func checkedAdd(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if err := checkAddSize(x, y); err != nil {
		return nil, err
	}
	charge(thread, strLen(x)+strLen(y))
	return starlark.Binary(syntax.PLUS, x, y)
}

func checkAddSize(x, y starlark.Value) error {
	if xs, ok := x.(starlark.String); ok {
		if ys, ok := y.(starlark.String); ok && len(xs)+len(ys) > MaxString {
			return sizeErr("string", len(xs)+len(ys), MaxString)
		}
	}
	if nx, ok := seqLen(x); ok {
		if ny, ok := seqLen(y); ok && nx+ny > MaxElems {
			return sizeErr("sequence", nx+ny, MaxElems)
		}
	}
	return nil
}

// checkedIAdd is x += y: lists are extended in place, like Starlark's own
// augmented assignment.
func checkedIAdd(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if l, ok := x.(*starlark.List); ok {
		items, err := boundedItems(thread, y, "+=")
		if err != nil {
			return nil, err
		}
		if l.Len()+len(items) > MaxElems {
			return nil, sizeErr("list", l.Len()+len(items), MaxElems)
		}
		for _, it := range items {
			if err := l.Append(it); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	return checkedAdd(thread, b, args, kwargs)
}

func checkedMul(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if xi, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok {
			if bits := xi.BigInt().BitLen() + yi.BigInt().BitLen(); bits > MaxIntBits {
				return nil, sizeErr("integer (bits)", bits, MaxIntBits)
			}
			return starlark.Binary(syntax.STAR, x, y)
		}
		x, y = y, x // int * seq
	}
	if yi, ok := y.(starlark.Int); ok {
		n, err := starlark.AsInt32(yi)
		if err != nil {
			return nil, fmt.Errorf("repeat count: %w", err)
		}
		if n < 0 {
			n = 0
		}
		switch x := x.(type) {
		case starlark.String:
			if int64(len(x))*int64(n) > MaxString {
				return nil, sizeErr("string", len(x)*n, MaxString)
			}
			charge(thread, len(x)*n)
		case starlark.Bytes:
			if int64(len(x))*int64(n) > MaxString {
				return nil, sizeErr("bytes", len(x)*n, MaxString)
			}
			charge(thread, len(x)*n)
		case *starlark.List, starlark.Tuple:
			if l := int64(starlark.Len(x)) * int64(n); l > MaxElems {
				return nil, sizeErr("sequence", int(l), MaxElems)
			}
			charge(thread, starlark.Len(x)*n)
		}
	}
	return starlark.Binary(syntax.STAR, args[0], args[1])
}

func checkedIMul(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	// Starlark's list *= n builds a new list too, so no in-place case.
	return checkedMul(thread, b, args, kwargs)
}

func checkedMod(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if f, ok := x.(starlark.String); ok {
		est := len(f) + strings.Count(string(f), "%")*sizeOf(y, MaxString)
		if est > MaxString {
			return nil, sizeErr("formatted string", est, MaxString)
		}
		charge(thread, est)
	}
	return starlark.Binary(syntax.PERCENT, x, y)
}

// checkedAttr returns x.name, wrapping the methods that can multiply sizes
// (or iterate without steps) in checks.
func checkedAttr(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x := args[0]
	name := string(args[1].(starlark.String))
	charge(thread, cost(x))
	attr, err := getattr(x, name)
	if err != nil {
		return nil, err
	}
	return wrapMethod(x, name, attr), nil
}

func getattr(x starlark.Value, name string) (starlark.Value, error) {
	h, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	attr, err := h.Attr(name)
	if err != nil {
		return nil, err
	}
	if attr == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	return attr, nil
}

func wrapMethod(recv starlark.Value, name string, attr starlark.Value) starlark.Value {
	if !guardedMethods[name] {
		return attr
	}
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if scanningMethods[name] {
			if err := chargeMethod(thread, recv, name, args); err != nil {
				return nil, err
			}
		}
		switch name {
		case "join":
			if len(args) == 1 {
				items, err := boundedItems(thread, args[0], "join")
				if err != nil {
					return nil, err
				}
				total := 0
				for _, it := range items {
					total += strLen(it) + len(strValue(recv))
					if total > MaxString {
						return nil, sizeErr("joined string", total, MaxString)
					}
				}
				charge(thread, total)
				return starlark.Call(thread, attr, starlark.Tuple{starlark.NewList(items)}, kwargs)
			}
		case "replace":
			if len(args) >= 2 {
				s := strValue(recv)
				old, _ := starlark.AsString(args[0])
				repl, _ := starlark.AsString(args[1])
				n := strings.Count(s, old)
				if est := len(s) + n*len(repl); est > MaxString {
					return nil, sizeErr("replaced string", est, MaxString)
				}
				charge(thread, len(s)+n*len(repl))
			}
		case "format":
			maxArg := 0
			for _, a := range args {
				maxArg = max(maxArg, strLen(a))
			}
			for _, kv := range kwargs {
				maxArg = max(maxArg, strLen(kv[1]))
			}
			s := strValue(recv)
			if est := len(s) + strings.Count(s, "{")*maxArg; est > MaxString {
				return nil, sizeErr("formatted string", est, MaxString)
			}
			charge(thread, len(s)+maxArg)
		case "extend", "update":
			if len(args) == 1 {
				items, err := boundedItems(thread, args[0], name)
				if err != nil {
					return nil, err
				}
				if n := starlark.Len(recv) + len(items); n > MaxElems {
					return nil, sizeErr("collection", n, MaxElems)
				}
				return starlark.Call(thread, attr, starlark.Tuple{starlark.NewList(items)}, kwargs)
			}
		}
		return starlark.Call(thread, attr, args, kwargs)
	})
}

func strValue(v starlark.Value) string {
	s, _ := starlark.AsString(v)
	return s
}

// boundedItems iterates v, failing once it yields more than MaxElems items,
// and charges the iteration to the thread's steps.
func boundedItems(thread *starlark.Thread, v starlark.Value, what string) ([]starlark.Value, error) {
	if d, ok := v.(*starlark.Dict); ok {
		// dict.update(dict) and list(dict) iterate keys; update needs
		// pairs, so hand dicts over as item pairs.
		if what == "update" {
			items := d.Items()
			out := make([]starlark.Value, len(items))
			for i, kv := range items {
				out[i] = kv
			}
			charge(thread, len(out)*16)
			return out, nil
		}
	}
	if s, ok := v.(starlark.Sequence); ok && s.Len() > MaxElems {
		return nil, fmt.Errorf("%s: iterable has %d items, over the sandbox limit of %d", what, s.Len(), MaxElems)
	}
	it := starlark.Iterate(v)
	if it == nil {
		return nil, fmt.Errorf("%s: %s is not iterable", what, v.Type())
	}
	defer it.Done()
	var out []starlark.Value
	var x starlark.Value
	for it.Next(&x) {
		if len(out) >= MaxElems {
			return nil, fmt.Errorf("%s: iterable has more than %d items, the sandbox limit", what, MaxElems)
		}
		out = append(out, x)
	}
	charge(thread, len(out)*16)
	return out, nil
}

// guardIterables shadows a universe builtin whose positional arguments are
// iterated in Go: each is first materialised within the bounds.
func guardIterables(name string, positions ...int) *starlark.Builtin {
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		args = append(starlark.Tuple(nil), args...)
		for i := range args {
			if len(positions) > 0 && !slices.Contains(positions, i) {
				continue
			}
			switch args[i].(type) {
			case starlark.String, starlark.Int, starlark.Float, starlark.Bool, starlark.NoneType:
				continue
			}
			if starlark.Iterate(args[i]) == nil {
				continue // let the builtin report the type error
			}
			items, err := boundedItems(thread, args[i], name)
			if err != nil {
				return nil, err
			}
			if _, isDict := args[i].(*starlark.Dict); isDict && name == "dict" {
				continue // dict(d) copies pairs; already bounded by d's size
			}
			args[i] = starlark.NewList(items)
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

// guardSized shadows str and repr: the text of a value is bounded by its
// size, which is measured (boundedly) before rendering.
func guardSized(name string) *starlark.Builtin {
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		for _, a := range args {
			n := sizeOf(a, MaxString)
			if n > MaxString {
				return nil, sizeErr(name+" of value", n, MaxString)
			}
			if _, isStr := a.(starlark.String); !isStr || name == "repr" {
				// Rendering costs several times a scan per byte.
				if err := chargeBytes(thread, name, renderCost*n); err != nil {
					return nil, err
				}
			}
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

// guardInt shadows int and float: parsing a long digit string is
// superlinear and builds integers past MaxIntBits.
func guardInt(name string) *starlark.Builtin {
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok {
				if len(s) > maxNumberText {
					return nil, fmt.Errorf("%s: string of %d bytes is too long for a number (limit %d)", name, len(s), maxNumberText)
				}
				charge(thread, len(s))
			}
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

// maxNumberText bounds the text int() and float() parse: enough for any
// MaxIntBits integer in any base with separators.
const maxNumberText = 2 * MaxIntBits

func guardGetattr(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, def starlark.Value
	var name string
	if err := starlark.UnpackPositionalArgs("getattr", args, kwargs, 2, &x, &name, &def); err != nil {
		return nil, err
	}
	attr, err := getattr(x, name)
	if err != nil {
		if def != nil {
			return def, nil
		}
		return nil, err
	}
	return wrapMethod(x, name, attr), nil
}

// predeclared is the environment every harness sees: the checked
// operators, the shadowed builtins and the three modules.
var predeclared = func() starlark.StringDict {
	d := starlark.StringDict{
		guardPrefix + "add":    starlark.NewBuiltin("+", checkedAdd),
		guardPrefix + "iadd":   starlark.NewBuiltin("+=", checkedIAdd),
		guardPrefix + "mul":    starlark.NewBuiltin("*", checkedMul),
		guardPrefix + "imul":   starlark.NewBuiltin("*=", checkedIMul),
		guardPrefix + "mod":    starlark.NewBuiltin("%", checkedMod),
		guardPrefix + "attr":   starlark.NewBuiltin("attr", checkedAttr),
		guardPrefix + "charge": starlark.NewBuiltin("charge", checkedCharge),
		guardPrefix + "lshift": starlark.NewBuiltin("<<", checkedLshift),
		guardPrefix + "key":    starlark.NewBuiltin("key", checkedKey),
		"hash":                 guardScan("hash", starlark.Universe["hash"].(*starlark.Builtin)),
		"int":                  guardInt("int"),
		"float":                guardInt("float"),
		"getattr":              starlark.NewBuiltin("getattr", guardGetattr),
		"str":                  guardSized("str"),
		"repr":                 guardSized("repr"),
		"re":                   reModule,
		"json":                 jsonModule,
		"math":                 mathModule,
		"vote":                 voteModule,
	}
	for tok, name := range binaryGuards {
		if _, set := d[name]; !set {
			d[name] = starlark.NewBuiltin(tok.String(), checkedCompare(tok))
		}
	}
	for _, name := range []string{"list", "tuple", "dict", "sorted", "reversed", "enumerate", "zip", "max", "min", "any", "all"} {
		d[name] = guardIterables(name)
	}
	for _, name := range []string{"sorted", "max", "min"} {
		d[name] = guardScan(name, d[name].(*starlark.Builtin))
	}
	d.Freeze()
	return d
}()

// newThread returns a thread for one load or call: its own step budget,
// print discarded, load refused, and a wall-clock guard that only logs and
// cancels if the step accounting failed.
func newThread(name string, steps uint64) (*starlark.Thread, func()) {
	th := &starlark.Thread{
		Name:  name,
		Print: func(*starlark.Thread, string) {},
		Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
			return nil, fmt.Errorf("load is not allowed in a harness")
		},
	}
	th.SetMaxExecutionSteps(steps)
	th.SetLocal(maxStepsKey, steps)
	timer := time.AfterFunc(WallGuard, func() {
		slog.Error("harnesses: wall-clock guard fired; a builtin escaped step accounting", "thread", name, "guard", WallGuard)
		th.Cancel("wall-clock guard (safety net) reached")
	})
	return th, func() { timer.Stop() }
}

// bigIntLimit keeps json.decode from building huge integers from digits.
var bigIntLimit = new(big.Int).Lsh(big.NewInt(1), MaxIntBits)
