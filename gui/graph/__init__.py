"""The dependency graph: layered layout, scene items, and the view (zoom, drag-to-connect)."""
