#!/usr/bin/env bash
# One-shot microbenchmark run for a session that has a GPU (docs/microbenchmarks.md).
#
#   bench/gpu_micro.sh prepare     here, on the CPU machine (pip works): download the wheels the GPU
#                                  machine lacks (pydantic and its three helpers, Python 3.12, x86-64)
#                                  into .whl/ (ignored by git: .git/info/exclude)
#   bench/gpu_micro.sh             on the GPU machine, e.g. through the device tool:
#                                  run(command="bash bench/gpu_micro.sh", carry=[".whl"], timeout_s=420)
#
# The run needs nvcc (CUDA 12.4+), cuda-python (cuda.bindings), numpy, typer and rich (the GPU image
# has them), installs the carried wheels into /tmp/site when pydantic is missing, runs each experiment
# group of `gpusim measure --micro` in its own process (a kernel that faults loses only its group), and
# writes under $OUT (default ./micro_out): micro_measurements.csv (every row, one header),
# gpu_micro.log (the whole log) and nvidia_smi.txt. About 2-3 minutes on an H100/H200. GROUP_TIMEOUT_S
# (default 240) bounds each group's process; RUN_GPU_TESTS=0 skips the GPU-marked tests at the end.
# Afterwards, here: copy the CSV to data/measurements/micro_<arch>_<yyyymmdd>.csv, and run
#   gpusim calibrate data/measurements/*.csv --arch <arch> --dry-run
# to see the constants it identifies and the calibration fields it holds.
set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PYTHON:-python3}

if [ "${1:-}" = "prepare" ]; then
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> "$(git rev-parse --git-common-dir)/info/exclude"
  mkdir -p .whl
  VENV_PY=${VENV_PY:-.venv/bin/python}
  for pkg in pydantic pydantic_core annotated_types typing_inspection; do
    ver=$($VENV_PY -c "import importlib.metadata as m; print(m.version('${pkg}'.replace('_', '-')))")
    $VENV_PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d .whl "${pkg//_/-}==${ver}" || { echo "prepare: could not download ${pkg}==${ver}"; exit 1; }
  done
  ls -la .whl
  exit 0
fi

OUT=${OUT:-$REPO/micro_out}
mkdir -p "$OUT"
LOG=$OUT/gpu_micro.log
exec > >(tee "$LOG") 2>&1
export PYTHONUNBUFFERED=1
echo "== gpu_micro.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) in $REPO"
nvidia-smi > "$OUT/nvidia_smi.txt" 2>&1 || echo "nvidia-smi failed (no GPU?)"
if ! $PY -c "import pydantic" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      || { echo "installing the carried wheels failed"; exit 1; }
    export PYTHONPATH=/tmp/site
  else
    echo "pydantic is missing and no wheels were carried: run 'bench/gpu_micro.sh prepare' first, carry .whl"
    exit 1
  fi
fi
export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
$PY -c "import cuda.bindings, numpy, typer, rich, pydantic; print('python ok:', __import__('sys').version.split()[0])" \
  || { echo "a Python package the run needs is missing"; exit 1; }
command -v nvcc >/dev/null && nvcc --version | tail -2

BUILD=/tmp/gpusim-micro-build
CSV=$OUT/micro_measurements.csv
rm -f "$CSV"
status=0
for group in wgmma wgmma_overlap operand_path mma_sync tensor_clock l2_bandwidth l2_clock l2_atomics pipes sync_latency; do
  part=/tmp/gpusim-micro-$group.csv
  rm -f "$part"
  echo "== group $group"
  timeout "${GROUP_TIMEOUT_S:-240}" $PY -m gpusim measure --micro --only "$group" --build-dir "$BUILD" --out "$part"
  rc=$?
  echo "== group $group: exit $rc"
  [ $rc -eq 0 ] || status=1
  if [ -s "$part" ]; then
    if [ -s "$CSV" ]; then tail -n +2 "$part" >> "$CSV"; else cp "$part" "$CSV"; fi
  fi
done
if [ "${RUN_GPU_TESTS:-1}" = 1 ]; then
  echo "== GPU-marked tests"
  timeout 120 $PY -m pytest -q -m gpu -p no:cacheprovider tests/test_micro_gpu.py tests/test_compiler_gpu.py 2>&1 | tail -15
fi
[ -s "$CSV" ] && echo "== $(($(wc -l < "$CSV") - 1)) rows in $CSV" || echo "== no rows"
exit $status
