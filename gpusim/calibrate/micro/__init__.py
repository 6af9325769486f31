"""Microbenchmarks for the engine's uncertain constants (``gpusim measure --micro``).

Small self-timing CUDA kernels (kernels/micro/*.cu) for the experiments of the engine-fidelity audit
(§5): wgmma rate by instruction width and operand source, wgmma beside MUFU/FFMA work and beside
shared-memory traffic, mma.sync rate by warps per SMSP, the clock a tensor load sustains with zero
and random data, and L2 bandwidth from one SM and from all. Modules, one concept each:

- :mod:`~gpusim.calibrate.micro.catalog`: every experiment variant (kernel, launch, runtime arguments,
  which gap of the audit it settles) as data;
- :mod:`~gpusim.calibrate.micro.build`: compiling the sources for the device's SM target (ptxas checks);
- :mod:`~gpusim.calibrate.micro.device`: the GPU through cuda-python's driver API (launch, timing,
  provenance);
- :mod:`~gpusim.calibrate.micro.derive`: raw per-CTA records to measured quantities (pure functions);
- :mod:`~gpusim.calibrate.micro.rows`: measurement-format rows and the CSV;
- :mod:`~gpusim.calibrate.micro.run`: the ``measure --micro`` command's pipeline;
- :mod:`~gpusim.calibrate.micro.constants`: what a microbenchmark CSV says about an arch, and the
  calibration fields ``gpusim calibrate`` sets from it.
"""
