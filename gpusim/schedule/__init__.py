"""Schedules: the YAML form, safe expressions, the frozen IR and static checks."""
