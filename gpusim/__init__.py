"""gpusim: a resource-model simulator for GPU kernel schedules, Volta to Blackwell.

Public API::

    from gpusim import load_arch, all_archs
"""

from gpusim.arch import Arch, all_archs, builtin_arch_ids, load_arch
from gpusim.errors import DeadlockError, GpusimError, InputError, ScheduleRefused

__all__ = [
    "Arch",
    "DeadlockError",
    "GpusimError",
    "InputError",
    "ScheduleRefused",
    "all_archs",
    "builtin_arch_ids",
    "load_arch",
]
__version__ = "0.1.0"
