"""Turn a build input into per-kernel resources and SASS: a ``.cu`` source (compiled with nvcc), a cubin,
a fatbin / executable / shared object (every embedded cubin of the requested arch), or saved ``ptxas -v``
/ ``cuobjdump`` text."""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpusim.compiler.demangle import demangle_all
from gpusim.compiler.elf_symbols import is_elf, read_u32_symbols
from gpusim.compiler.kernel_resources import KernelResources
from gpusim.compiler.parse_cuobjdump import (
    apply_elf_info,
    parse_elf_info,
    parse_resource_usage,
    require_text_kind,
)
from gpusim.compiler.parse_ptxas import parse_ptxas_verbose
from gpusim.compiler.sass import SassFunction, parse_sass
from gpusim.compiler.toolchain import Toolchain, find_toolchain
from gpusim.errors import InputError, quote

SOURCE_SUFFIXES = (".cu",)
DEFAULT_NVCC_FLAGS = ("-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG")
"""Release-build flags (CUTLASS's own: without NDEBUG its kernels keep assert calls, which serialize
wgmma and spill). A user's ``--std`` replaces the default standard."""
COMPILE_TIMEOUT_S = 1800
_EM_CUDA = 190


@dataclass
class KernelReport:
    """One kernel of a build: its resources and (when the build had SASS) its instructions."""

    resources: KernelResources
    sass: SassFunction | None = None

    @property
    def name(self) -> str:
        """The demangled name."""
        return self.resources.name or self.resources.mangled_name

    def as_dict(self, loops: bool = True) -> dict[str, Any]:
        """JSON form: resources, the whole-kernel mix and each innermost loop's mix."""
        data: dict[str, Any] = {"resources": self.resources.as_dict()}
        if self.sass is not None:
            data["sass"] = self.sass.mix.as_dict()
            if loops:
                data["innermost_loops"] = [loop.as_dict() for loop in self.sass.innermost_loops()]
        return data


@dataclass
class BuildReport:
    """Every kernel a build input holds for one arch."""

    path: str
    arch: str
    kernels: list[KernelReport] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    compile_s: float | None = None
    ptxas_warnings: list[str] = field(default_factory=list)

    def kernel(self, name_part: str | None = None) -> KernelReport:
        """The one kernel whose (demangled or mangled) name contains ``name_part``; with None, the
        largest kernel (most SASS instructions, else most registers)."""
        candidates = [
            k
            for k in self.kernels
            if name_part is None or name_part in k.name or name_part in k.resources.mangled_name
        ]
        if not candidates:
            names = ", ".join(k.name[:60] for k in self.kernels)
            raise InputError(f"{self.path}: no kernel named like '{name_part}' (kernels: {names})")
        return max(
            candidates,
            key=lambda k: (len(k.sass.instructions) if k.sass else 0, k.resources.registers_per_thread),
        )


MIN_SM_TARGET = 50
"""The oldest SM target current nvcc (12.x, 13.x) builds for (Maxwell)."""
MAX_SM_TARGET = 199
"""Targets above this are not SM versions (sm_121 is the newest at the time of writing)."""


def nvcc_arch(arch: str) -> str:
    """The nvcc/ptxas target for an ``--arch`` value: ``sm_90a`` stays; ``h100`` or ``sm_90`` becomes
    ``sm_90a`` (the arch-specific target that wgmma, setmaxnreg and tcgen05 need, on sm_90 and later)."""
    text = arch.strip().lower()
    if re.fullmatch(r"sm_\d+[af]?", text):
        number = int(re.sub(r"\D", "", text))
        if not MIN_SM_TARGET <= number <= MAX_SM_TARGET:
            raise InputError(f"--arch {quote(arch, 40)}: not an SM target nvcc builds (sm_{MIN_SM_TARGET} to "
                             f"sm_{MAX_SM_TARGET}, e.g. sm_80, sm_90a, sm_100a) nor an arch id")  # fmt: skip
        return text if text[-1] in "af" or number < 90 else text + "a"
    from gpusim.arch import load_arch

    version = load_arch(arch).sm_version
    return f"sm_{version}a" if version >= 90 else f"sm_{version}"


def _run(command: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=cwd, timeout=COMPILE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"{what}: timed out after {COMPILE_TIMEOUT_S} s") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot run {command[0]}: {exc.strerror}") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).splitlines() if "error" in ln.lower()]
        first = lines[0].strip() if lines else (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InputError(f"{what}: failed (exit {done.returncode}): {first[:300]}")
    return done


def compile_source(
    source: Path,
    arch: str,
    flags: list[str] | tuple[str, ...] = (),
    out_dir: Path | None = None,
    toolchain: Toolchain | None = None,
) -> tuple[Path, str, list[str], float]:
    """Compile ``source`` to a cubin for ``arch`` with ``-Xptxas -v``; the cubin path, the ptxas text, the
    command and the wall time in seconds. CUTLASS's include directories are added when installed."""
    chain = toolchain or find_toolchain()
    target = nvcc_arch(arch)
    out = (out_dir or Path(tempfile.mkdtemp(prefix="gpusim-build-"))) / f"{source.stem}.{target}.cubin"
    user = list(flags)
    defaults = [
        f
        for f in DEFAULT_NVCC_FLAGS
        if not (f.startswith("-std") and any(u.startswith(("-std", "--std")) for u in user))
    ]
    includes = [f"-I{d}" for d in chain.include_dirs + chain.cutlass_include_dirs]
    command = [str(chain.nvcc), f"-arch={target}", "-cubin", "-Xptxas", "-v", *defaults, *includes, *user,
               str(source), "-o", str(out)]  # fmt: skip
    start = time.perf_counter()
    done = _run(command, f"{source}: nvcc")
    return out, done.stdout + done.stderr, command, time.perf_counter() - start


def _cuobjdump(chain: Toolchain, args: list[str], path: Path) -> str:
    return _run(
        [str(chain.tool("cuobjdump")), *args, str(path)], f"{path}: cuobjdump {' '.join(args)}"
    ).stdout


def inspect_cubin(
    path: Path, arch: str = "", toolchain: Toolchain | None = None, sass: bool = True
) -> list[KernelReport]:
    """Resources (and SASS) of every kernel in one cubin."""
    chain = toolchain or find_toolchain()
    usage = _cuobjdump(chain, ["--dump-resource-usage"], path)
    if "REG:" not in usage:  # a cubin without kernels (a binary also embeds such)
        return []
    elf = parse_elf_info(_cuobjdump(chain, ["-elf"], path))
    target = elf.arch or arch
    kernels = [apply_elf_info(k, elf) for k in parse_resource_usage(usage, target)]
    symbols = read_u32_symbols(path.read_bytes())
    dynamic = symbols.get("gpusim_dynamic_smem_bytes")
    threads = symbols.get("gpusim_threads_per_cta")
    functions = parse_sass(_cuobjdump(chain, ["-sass"], path), target) if sass else []
    by_name = {f.name: f for f in functions}
    reports = []
    for k in kernels:
        function = by_name.get(k.mangled_name)
        k = replace(
            k,
            dynamic_smem_bytes=dynamic if dynamic is not None else k.dynamic_smem_bytes,
            max_threads_per_cta=k.max_threads_per_cta or threads,
            warpgroup_registers=function.setmaxnreg() if function else (),
        )
        if function is not None:
            stores, loads = function.local_access_bytes()
            k = replace(k, local_store_bytes=stores, local_load_bytes=loads)
        reports.append(KernelReport(k, function))
    return reports


def _cubins_in_binary(path: Path, arch: str, chain: Toolchain, work: Path) -> list[tuple[Path, str]]:
    listing = _cuobjdump(chain, ["-lelf"], path)
    names = re.findall(r"ELF file\s+\d+:\s*(\S+\.cubin)", listing)
    available = sorted({m[1] for n in names if (m := re.search(r"\.(sm_\w+)\.cubin$", n))})
    wanted = [n for n in names if n.endswith(f".{arch}.cubin")]
    if not wanted:
        have = ", ".join(available) or "none"
        raise InputError(f"{path}: no cubin for {arch} (embedded cubins: {have})")
    _run(
        [str(chain.tool("cuobjdump")), "-xelf", "all", str(path.resolve())],
        f"{path}: cuobjdump -xelf",
        cwd=work,
    )
    return [(work / n, arch) for n in wanted if (work / n).is_file()]


def _merge_ptxas(kernels: list[KernelReport], ptxas: list[KernelResources]) -> list[KernelReport]:
    by_name = {k.mangled_name: k for k in ptxas}
    merged = []
    for report in kernels:
        from_ptxas = by_name.get(report.resources.mangled_name)
        if from_ptxas is not None:
            report = KernelReport(from_ptxas.merged(report.resources), report.sass)
        merged.append(report)
    return merged


def _with_names(kernels: list[KernelReport]) -> list[KernelReport]:
    names = demangle_all(k.resources.mangled_name for k in kernels)
    return [KernelReport(replace(k.resources, name=names[k.resources.mangled_name]), k.sass) for k in kernels]


def _inspect_text(path: Path, text: str, arch: str) -> list[KernelReport]:
    kind = require_text_kind(text, str(path))
    if kind == "ptxas":
        return [KernelReport(k) for k in parse_ptxas_verbose(text, source=f"{path} (ptxas -v)")]
    if kind == "resource-usage":
        return [
            KernelReport(k)
            for k in parse_resource_usage(text, arch, source="cuobjdump --dump-resource-usage")
        ]
    if kind == "elf":
        raise InputError(
            f"{path}: cuobjdump -elf text alone has no register counts; save --dump-resource-usage too"
        )
    functions = parse_sass(text, arch, source=str(path))
    return [KernelReport(KernelResources(f.name, f.arch or arch, 0, warpgroup_registers=f.setmaxnreg(), sources=("sass",)), f) for f in functions]  # fmt: skip


def inspect_file(
    path: str | Path,
    arch: str,
    flags: list[str] | tuple[str, ...] = (),
    sass: bool = True,
    toolchain: Toolchain | None = None,
) -> BuildReport:
    """Every kernel ``path`` holds for ``arch`` (see the module docstring for what ``path`` may be)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{file}: no such file")
    target = nvcc_arch(arch)
    head = file.read_bytes()[:4096]
    if file.suffix in SOURCE_SUFFIXES:
        chain = toolchain or find_toolchain()
        with tempfile.TemporaryDirectory(prefix="gpusim-build-") as tmp:
            cubin, log, command, seconds = compile_source(file, target, flags, Path(tmp), chain)
            kernels = _merge_ptxas(
                inspect_cubin(cubin, target, chain, sass), parse_ptxas_verbose(log, f"{file}: ptxas -v")
            )
        warnings = [
            ln.strip() for ln in log.splitlines() if "warning" in ln.lower() and "ptxas" in ln.lower()
        ]
        report = BuildReport(str(file), target, _with_names(kernels), command, seconds, warnings)
    elif is_elf(head):
        chain = toolchain or find_toolchain()
        if int.from_bytes(head[18:20], "little") == _EM_CUDA:
            kernels = inspect_cubin(file, target, chain, sass)
        else:
            with tempfile.TemporaryDirectory(prefix="gpusim-elf-") as tmp:
                kernels = [k for cubin, a in _cubins_in_binary(file, target, chain, Path(tmp)) for k in inspect_cubin(cubin, a, chain, sass)]  # fmt: skip
        report = BuildReport(str(file), target, _with_names(kernels))
    elif head.startswith(b"\x50\xed\x55\xba") or file.suffix == ".fatbin":
        chain = toolchain or find_toolchain()
        with tempfile.TemporaryDirectory(prefix="gpusim-fatbin-") as tmp:
            kernels = [k for cubin, a in _cubins_in_binary(file, target, chain, Path(tmp)) for k in inspect_cubin(cubin, a, chain, sass)]  # fmt: skip
        report = BuildReport(str(file), target, _with_names(kernels))
    else:
        try:
            text = file.read_text()
        except UnicodeDecodeError:
            raise InputError(
                f"{file}: not a .cu source, a cubin, an ELF binary, a fatbin or saved tool text"
            ) from None
        report = BuildReport(str(file), target, _with_names(_inspect_text(file, text, target)))
    if not report.kernels:
        raise InputError(f"{file}: no kernels for {target}")
    return report
