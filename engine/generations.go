package engine

// generations is a set bounded by forgetting its oldest members: it
// keeps two generations of at most size members each, and a full current
// generation becomes the previous one, dropping the one before. Callers
// lock it.
type generations[K comparable] struct {
	size      int
	cur, prev map[K]struct{}
}

func newGenerations[K comparable](size int) generations[K] {
	return generations[K]{size: size, cur: make(map[K]struct{})}
}

func (g *generations[K]) add(k K) {
	if len(g.cur) >= g.size {
		g.prev, g.cur = g.cur, make(map[K]struct{}, g.size)
	}
	g.cur[k] = struct{}{}
}

func (g *generations[K]) has(k K) bool {
	if _, ok := g.cur[k]; ok {
		return true
	}
	_, ok := g.prev[k]
	return ok
}

func (g *generations[K]) remove(k K) {
	delete(g.cur, k)
	delete(g.prev, k)
}

func (g *generations[K]) len() int { return len(g.cur) + len(g.prev) }
