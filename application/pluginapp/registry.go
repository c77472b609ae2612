// Package pluginapp is the catalogue of node types: the registry that
// validation and the plugin API read, fed at startup with the descriptors the
// plugins adapter provides.
package pluginapp

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/yukta/yukta/domain/plugin"
)

// Registry holds the known node types. It is built once at startup and only
// read afterwards, so it needs no lock.
type Registry struct {
	byType map[string]plugin.Descriptor
	sorted []plugin.Descriptor
}

// NewRegistry checks and registers descriptors. A bad or repeated descriptor
// is a programming error and stops the server from starting.
func NewRegistry(ds ...plugin.Descriptor) (*Registry, error) {
	r := &Registry{byType: make(map[string]plugin.Descriptor, len(ds))}
	for _, d := range ds {
		if err := d.Check(); err != nil {
			return nil, err
		}
		if _, dup := r.byType[d.Type]; dup {
			return nil, fmt.Errorf("pluginapp: node type %s is registered twice (a built-in and an added type, or two added types, share the name); give the added type a name of its own", d.Type)
		}
		r.byType[d.Type] = d
		r.sorted = append(r.sorted, d)
	}
	order := map[plugin.Category]int{plugin.Trigger: 0, plugin.Processor: 1, plugin.Terminal: 2}
	slices.SortFunc(r.sorted, func(a, b plugin.Descriptor) int {
		return cmp.Or(cmp.Compare(order[a.Category], order[b.Category]), cmp.Compare(a.Type, b.Type))
	})
	return r, nil
}

// Describe returns the descriptor of typ.
func (r *Registry) Describe(typ string) (plugin.Descriptor, bool) {
	d, ok := r.byType[typ]
	return d, ok
}

// All returns every descriptor, triggers first, then processors, then
// terminals, each group by type name.
func (r *Registry) All() []plugin.Descriptor { return slices.Clone(r.sorted) }
