"""fullgraph package."""
