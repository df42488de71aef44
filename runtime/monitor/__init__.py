"""Per-opcode observation of one run: the settrace driver, the run state, opcode handlers, calls into code the monitor does not step into."""
