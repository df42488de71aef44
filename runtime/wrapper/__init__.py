"""The generated compiled wrapper: an entrypoint's records as a standalone module."""
