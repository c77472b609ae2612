package pluginapp

import (
	"context"

	"github.com/yukta/yukta/domain/plugin"
)

// ListPlugins returns the catalogue of node types.
type ListPlugins struct{ registry *Registry }

// NewListPlugins returns the use case.
func NewListPlugins(r *Registry) *ListPlugins { return &ListPlugins{registry: r} }

// Handle lists every registered type.
func (uc *ListPlugins) Handle(context.Context) []plugin.Descriptor { return uc.registry.All() }
