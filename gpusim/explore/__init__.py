"""Exploration at scale: sweeps over parameter grids, the tuner behind ``auto:*``, and rank checks.

Every prediction goes through :mod:`gpusim.explore.adapter` (the project's one prediction path);
points run in local processes or on a Dask distributed cluster (:mod:`gpusim.explore.executors`).
"""
