package workflowcheck

import "go/types"

// exportFacts exports a NonDeterministic fact for each function of the
// package that does, or calls, something a workflow must not.
func (c *checker) exportFacts() {
	if c.module == "" {
		return
	}
	facts := c.nondeterministic()
	for _, fn := range c.order {
		if f := facts[fn]; f != nil {
			c.pass.ExportObjectFact(fn, f)
		}
	}
}

// nondeterministic computes the package's facts: first each function's
// own first finding, then, until nothing changes, the functions that
// call one with a fact.
func (c *checker) nondeterministic() map[*types.Func]*NonDeterministic {
	facts := map[*types.Func]*NonDeterministic{}
	for _, fn := range c.order {
		if f, ok := c.firstFinding(c.summary(fn)); ok {
			facts[fn] = &NonDeterministic{Module: c.module, Cause: c.where(f)}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, fn := range c.order {
			if facts[fn] == nil {
				facts[fn] = c.inherit(fn, facts)
				changed = changed || facts[fn] != nil
			}
		}
	}
	return facts
}

// inherit is the fact fn gets from the first function it calls that has
// one, or nil.
func (c *checker) inherit(fn *types.Func, facts map[*types.Func]*NonDeterministic) *NonDeterministic {
	for _, e := range c.summary(fn).edges {
		if c.ig.covers(e.pos) {
			continue
		}
		if f := c.factOf(e.callee, facts); f != nil {
			via := funcName(e.callee)
			if f.Via != "" {
				via += ", " + f.Via
			}
			return &NonDeterministic{Module: c.module, Cause: f.Cause, Via: via}
		}
	}
	return nil
}

// factOf is callee's fact: from facts for the package's own functions,
// imported for the functions of other packages of the same module.
func (c *checker) factOf(callee *types.Func, facts map[*types.Func]*NonDeterministic) *NonDeterministic {
	if callee.Pkg() == c.pass.Pkg {
		return facts[callee]
	}
	return c.importedFact(callee)
}

// importedFact is the fact of a function of another package of the
// module, or nil.
func (c *checker) importedFact(fn *types.Func) *NonDeterministic {
	if c.module == "" || fn.Pkg() == c.pass.Pkg {
		return nil
	}
	f := new(NonDeterministic)
	if !c.pass.ImportObjectFact(fn, f) || f.Module != c.module {
		return nil
	}
	return f
}

// firstFinding is the first finding of s that no directive suppresses.
func (c *checker) firstFinding(s *summary) (finding, bool) {
	for _, f := range s.findings {
		if !c.ig.covers(f.pos) {
			return f, true
		}
	}
	return finding{}, false
}
