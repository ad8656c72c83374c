package hooks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/keyward/keyward/core"
)

// env is the only thing a compiled condition program can see: for condition i, Fi is the
// value found at its field path, Ki that value's kind (kindMissing when the path leads
// nowhere) and Vi the condition's value. The program's source is generated from the
// operators alone and names nothing but these members; field paths and values are never
// part of the source, so no owner input can change what a program means. The struct has
// no methods and the programs are compiled with every builtin function but len disabled
// (expr's predicate forms, such as filter, cannot be disabled; the generated source uses
// none of them).
type env struct {
	F0, F1, F2, F3, F4 any
	K0, K1, K2, K3, K4 any // int; an interface so that reading it makes no allocation
	V0, V1, V2, V3, V4 any
}

func (e *env) set(i int, f any, k int, v any) {
	// Small ints are boxed without allocation.
	switch i {
	case 0:
		e.F0, e.K0, e.V0 = f, k, v
	case 1:
		e.F1, e.K1, e.V1 = f, k, v
	case 2:
		e.F2, e.K2, e.V2 = f, k, v
	case 3:
		e.F3, e.K3, e.V3 = f, k, v
	case 4:
		e.F4, e.K4, e.V4 = f, k, v
	}
}

// conditionSource is the expr source of condition i with operator op. It is built only from
// constants of this package and the index i: Fi is the field's value, Ki its kind and Vi
// the condition's value.
func conditionSource(i int, op string) (string, error) {
	var format string
	switch op {
	case OpEq:
		// A missing field equals nothing; values compare as JSON values ("5" != 5).
		format = "(%[2]s != %[4]d && %[1]s == %[3]s)"
	case OpNeq:
		// A missing field differs from everything.
		format = "(%[2]s == %[4]d || %[1]s != %[3]s)"
	case OpContains:
		// A string holding the value as a substring, or an array holding an element equal
		// to it.
		format = "((%[2]s == %[5]d && %[1]s contains %[3]s) || (%[2]s == %[6]d && %[3]s in %[1]s))"
	case OpExists:
		// Present and non-empty: not null, not "", not [] and not {}.
		format = "(%[2]s == %[8]d || %[2]s == %[9]d || ((%[2]s == %[5]d || %[2]s == %[6]d || %[2]s == %[7]d) && len(%[1]s) > 0))"
	default:
		return "", fmt.Errorf("unknown operator %q", op)
	}
	return fmt.Sprintf(format, fmt.Sprintf("F%d", i), fmt.Sprintf("K%d", i), fmt.Sprintf("V%d", i),
		kindMissing, kindString, kindArray, kindObject, kindNumber, kindBool), nil
}

// compileConditions compiles the AND of conds into one program; nil when there are none.
func compileConditions(conds []Condition) (*vm.Program, error) {
	if len(conds) == 0 {
		return nil, nil
	}
	parts := make([]string, len(conds))
	for i, c := range conds {
		s, err := conditionSource(i, c.Operator)
		if err != nil {
			return nil, err
		}
		parts[i] = s
	}
	return compileSource(strings.Join(parts, " && "))
}

// compileSource compiles generated source against env: a boolean result, no builtin but len.
func compileSource(src string) (*vm.Program, error) {
	return expr.Compile(src, expr.Env(env{}), expr.AsBool(), expr.DisableAllBuiltins(), expr.EnableBuiltin("len"))
}

type compiledAction struct {
	a       Action
	message template
	reason  template
}

type compiledHook struct {
	id, name string
	program  *vm.Program // nil: no conditions, the hook always matches
	paths    []path
	values   []any // the conditions' values, numbers as float64
	actions  []compiledAction
}

// Pipeline is an application's enabled hooks compiled for evaluation. It is immutable and
// safe for concurrent use.
type Pipeline struct {
	hooks   []compiledHook   // enabled hooks by priority, then given order
	byEvent map[string][]int // event -> indexes into hooks, in order
}

// Compile validates and compiles the enabled hooks of an application (disabled ones are
// skipped without being looked at), ordered by priority and then by their order in hooks.
// Each hook's conditions become one expr program, compiled once. It fails with a
// VALIDATION_ERROR when more than MaxHooksPerApp hooks are given or an enabled hook is
// invalid (the message names the hook; Field is the one Validate gives).
func Compile(hooks []Hook) (*Pipeline, error) {
	if len(hooks) > MaxHooksPerApp {
		return nil, core.Invalid("hooks", "an application has at most %d hooks", MaxHooksPerApp)
	}
	var list []Hook
	for _, h := range hooks {
		if h.Enabled {
			list = append(list, h)
		}
	}
	// Stable: equal priorities keep the given order.
	sort.SliceStable(list, func(i, j int) bool { return list[i].Priority < list[j].Priority })

	p := &Pipeline{byEvent: map[string][]int{}}
	for _, h := range list {
		if err := Validate(h); err != nil {
			if e, ok := err.(*core.Error); ok {
				return nil, &core.Error{Code: e.Code, Field: e.Field,
					Message: fmt.Sprintf("hook %q (%s): %s", h.Name, h.ID, e.Message)}
			}
			return nil, err
		}
		h.Actions = append([]Action(nil), h.Actions...)
		Normalize(&h)
		c := compiledHook{id: h.ID, name: h.Name}
		prog, err := compileConditions(h.Conditions)
		if err != nil {
			return nil, &core.Error{Code: core.CodeInternal, Cause: err,
				Message: fmt.Sprintf("hook %q (%s): compiling its conditions", h.Name, h.ID)}
		}
		c.program = prog
		for _, cond := range h.Conditions {
			c.paths = append(c.paths, parsePath(cond.Field))
			v, _ := scalar(cond.Value) // nil for exists
			c.values = append(c.values, v)
		}
		for _, a := range h.Actions {
			if a.Payload != nil {
				a.Payload = cloneJSON(a.Payload).(map[string]any)
			}
			c.actions = append(c.actions, compiledAction{a: a,
				message: parseTemplate(a.Message), reason: parseTemplate(a.Reason)})
		}
		p.byEvent[h.Event] = append(p.byEvent[h.Event], len(p.hooks))
		p.hooks = append(p.hooks, c)
	}
	return p, nil
}

// Len is the number of compiled (enabled) hooks.
func (p *Pipeline) Len() int {
	if p == nil {
		return 0
	}
	return len(p.hooks)
}

// Events lists the events that have at least one enabled hook, sorted.
func (p *Pipeline) Events() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.byEvent))
	for e := range p.byEvent {
		out = append(out, e)
	}
	return sortedStrings(out)
}

// Plan returns the steps of every hook bound to m.Type whose conditions all hold, in
// priority order, each hook's actions in their order. A hook whose conditions fail, or
// cannot be evaluated, contributes nothing. Plan has no side effects and is deterministic.
func (p *Pipeline) Plan(m Message) []Step {
	if p == nil {
		return nil
	}
	idx := p.byEvent[m.Type]
	if len(idx) == 0 {
		return nil
	}
	var (
		machine vm.VM
		e       env
		matched [MaxHooksPerApp]int
		n, size int
	)
	for _, i := range idx {
		h := &p.hooks[i]
		if h.program != nil {
			e = env{}
			for j, pth := range h.paths {
				k, f := classify(lookup(&m, pth))
				e.set(j, f, k, h.values[j])
			}
			out, err := machine.Run(h.program, &e)
			if err != nil || out != true {
				continue
			}
		}
		matched[n] = i
		n++
		size += len(h.actions)
	}
	if n == 0 {
		return nil
	}
	steps := make([]Step, 0, size)
	for _, i := range matched[:n] {
		h := &p.hooks[i]
		for k := range h.actions {
			steps = append(steps, h.actions[k].step(h, &m))
		}
	}
	return steps
}

func (ca *compiledAction) step(h *compiledHook, m *Message) Step {
	a := ca.a
	if a.Message != "" {
		a.Message = ca.message.render(m)
	}
	if a.Reason != "" {
		a.Reason = ca.reason.render(m)
	}
	if a.Payload != nil {
		a.Payload = cloneJSON(a.Payload).(map[string]any)
	}
	s := Step{HookID: h.id, HookName: h.name, Action: a}
	switch a.Type {
	case ActionRespond:
		s.Target, s.UserID = TargetSender, m.UserID
	case ActionSendMessage:
		s.Target, s.UserID = TargetUser, a.UserID
	case ActionBroadcast:
		s.Target = TargetAll
	case ActionPushJSON:
		if a.UserID != "" {
			s.Target, s.UserID = TargetUser, a.UserID
		} else {
			s.Target = TargetAll
		}
	case ActionKick, ActionBan:
		if a.UserID != "" {
			s.Target, s.UserID = TargetUser, a.UserID
		} else {
			s.Target, s.UserID = TargetSender, m.UserID
		}
	case ActionLog:
		s.Target = TargetNone
	}
	return s
}
