"""Measured runs in, fitted costs and error bars out: measurement files, validation, calibration."""
