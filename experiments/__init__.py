"""Which claim from which paper: one module per seed figure or theorem, and the CLI."""
