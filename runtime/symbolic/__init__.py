"""Numbers that may change between calls: symbolic scalars, symbolic sizes, shape tracking."""
