#!/usr/bin/env bash
# Everything a short GPU session measures, in one command (the device tool allows few, full calls):
#
#   here:        bench/gpu_micro.sh prepare; pip download --no-deps nvidia-cutlass -d .whl
#   the device:  run(command="bash bench/gpu_session.sh", carry=[".whl"], timeout_s=560)
#
# 1. bench/gpu_torch_sweep.py: cuBLAS GEMMs, FlashAttention-2 (torch SDPA) and copies -> torch_sweep.csv,
#    with an nvidia-smi clock/power log (smi_log.csv);
# 2. bench/gpu_micro.sh: the engine-fidelity microbenchmarks -> micro_measurements.csv, gpu_micro.log;
# 3. gpusim measure-kernels: the reference kernels of kernels/ -> reference_kernels.csv (the CUTLASS ones
#    built on the machine's CPUs while steps 1 and 2 use the GPU).
# SKIP_SWEEP=1 / SKIP_MICRO=1 / SKIP_KERNELS=1 leave a step out; SWEEP_ARGS=--graph times the sweep from
# CUDA graphs; SWEEP_MATCH=REGEX runs only the sweep's cases whose names match.
# Each step has its own time limit; the whole log is session.log. Files land in $OUT (default ./session_out).
set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)
OUT=${OUT:-$REPO/session_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/session.log") 2>&1
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
echo "== gpu_session.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH=$REPO:/tmp/site
nvidia-smi > "$OUT/nvidia_smi.txt" 2>&1
KBUILD=/tmp/gpusim-kernel-build
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
SM="sm_${SM}$( [ "${SM:0:1}" -ge 9 ] && echo a)"
[ "${SKIP_KERNELS:-0}" = 1 ] || echo "== CUTLASS reference kernels for $SM: built in the background while the GPU measures"
[ "${SKIP_KERNELS:-0}" = 1 ] || for k in $($PY -c "from gpusim.compiler.catalog import REFERENCE_KERNELS as R; print(' '.join(x.file for x in R if x.cutlass and x.arch == '$SM'))"); do
  ( $PY -c "from pathlib import Path; from gpusim.compiler.catalog import REFERENCE_KERNELS as R; from gpusim.compiler.launch import cutlass_library as b; print(b(next(x for x in R if x.file == '$k'), '$SM', Path('$KBUILD')))" > "/tmp/kbuild-$k.log" 2>&1 & )
done
if [ "${SKIP_SWEEP:-0}" != 1 ]; then
  echo "== 1. torch sweep ${SWEEP_ARGS:-}"
  timeout "${SWEEP_TIMEOUT_S:-150}" $PY bench/gpu_torch_sweep.py "$OUT" --budget-s "${SWEEP_BUDGET_S:-110}" ${SWEEP_ARGS:-} \
    ${SWEEP_MATCH:+--match "$SWEEP_MATCH"}
  echo "== 1. exit $?"
fi
if [ "${SKIP_MICRO:-0}" != 1 ]; then
  echo "== 2. microbenchmarks"
  GROUP_TIMEOUT_S=${GROUP_TIMEOUT_S:-50} RUN_GPU_TESTS=0 OUT=$OUT bash bench/gpu_micro.sh >/dev/null
  echo "== 2. exit $? (log: gpu_micro.log)"
  tail -5 "$OUT/gpu_micro.log"
fi
[ "${SKIP_KERNELS:-0}" = 1 ] && { echo "== done $(date -u +%Y-%m-%dT%H:%M:%SZ)"; exit 0; }
echo "== 3. reference kernels, each in its own process (a fault poisons its CUDA context)"
CSV=$OUT/reference_kernels.csv
rm -f "$CSV"
for k in gemm_sync gemm_cp_async stream softmax cutlass_sm90_pingpong cutlass_sm90_cooperative; do
  case $k in cutlass_*)  # wait for its background build (it prints the library's path, or an error, when done)
    for _ in $(seq 1 "${BUILD_WAIT_S:-240}"); do [ -s "/tmp/kbuild-$k.cu.log" ] && break; sleep 1; done ;;
  esac
  timeout "${KERNEL_TIMEOUT_S:-120}" $PY -m gpusim measure-kernels --only $k --build-dir $KBUILD --out /tmp/k-$k.csv --iters 20
  echo "== $k: exit $?"
  cat /tmp/kbuild-$k.cu.log 2>/dev/null | tail -3
  if [ -s /tmp/k-$k.csv ]; then
    if [ -s "$CSV" ]; then tail -n +2 /tmp/k-$k.csv >> "$CSV"; else cp /tmp/k-$k.csv "$CSV"; fi
  fi
done
echo "== done $(date -u +%Y-%m-%dT%H:%M:%SZ)"
