package loop

// Generations is a map bounded by forgetting its oldest entries: it keeps
// two generations of at most size entries each, and a full current
// generation becomes the previous one, dropping the one before. A set is
// Generations[K, struct{}]. Callers lock it.
type Generations[K comparable, V any] struct {
	size      int
	cur, prev map[K]V
}

// NewGenerations makes a map of two generations of size entries.
func NewGenerations[K comparable, V any](size int) Generations[K, V] {
	return Generations[K, V]{size: size, cur: make(map[K]V)}
}

// Add sets k to v, aging a full generation first.
func (g *Generations[K, V]) Add(k K, v V) {
	if len(g.cur) >= g.size {
		g.prev, g.cur = g.cur, make(map[K]V, g.size)
	}
	g.cur[k] = v
}

// Get is k's value, if either generation holds it.
func (g *Generations[K, V]) Get(k K) (V, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.prev[k]
	return v, ok
}

// Has reports whether either generation holds k.
func (g *Generations[K, V]) Has(k K) bool {
	_, ok := g.Get(k)
	return ok
}

// Remove drops k from both generations.
func (g *Generations[K, V]) Remove(k K) {
	delete(g.cur, k)
	delete(g.prev, k)
}

// Len counts the entries of both generations.
func (g *Generations[K, V]) Len() int { return len(g.cur) + len(g.prev) }
