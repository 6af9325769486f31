"""The discrete-event engine: per-SM agents, chip-wide memory, synchronisation, role interpreters."""
