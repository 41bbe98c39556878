package engine

// generations is a map bounded by forgetting its oldest entries: it keeps
// two generations of at most size entries each, and a full current
// generation becomes the previous one, dropping the one before. A set is
// generations[K, struct{}]. Callers lock it.
type generations[K comparable, V any] struct {
	size      int
	cur, prev map[K]V
}

func newGenerations[K comparable, V any](size int) generations[K, V] {
	return generations[K, V]{size: size, cur: make(map[K]V)}
}

func (g *generations[K, V]) add(k K, v V) {
	if len(g.cur) >= g.size {
		g.prev, g.cur = g.cur, make(map[K]V, g.size)
	}
	g.cur[k] = v
}

func (g *generations[K, V]) get(k K) (V, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.prev[k]
	return v, ok
}

func (g *generations[K, V]) has(k K) bool {
	_, ok := g.get(k)
	return ok
}

func (g *generations[K, V]) remove(k K) {
	delete(g.cur, k)
	delete(g.prev, k)
}

func (g *generations[K, V]) len() int { return len(g.cur) + len(g.prev) }
