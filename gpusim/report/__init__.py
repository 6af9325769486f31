"""Reports: tables, JSON, traces and plots."""
