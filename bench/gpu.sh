#!/usr/bin/env bash
# GPU benchmark, prepared for a lent GPU machine (the device tool runs it from the repository
# root; results land in $OUT). Run with PARTS and PROVIDER=cuda on a lent H200 (2026-11-30,
# 2026-12-01, 2026-12-04: docs/benchmarks.md, *GPU*); the TensorRT path has not run (no TensorRT there).
#
#   bash bench/gpu.sh                      # TensorRT EP (fp16, engine cache, rec profiles)
#   PROVIDER=cuda bash bench/gpu.sh        # CUDA EP only
#   WHEELS=/path/to/wheels bash bench/gpu.sh   # install offline from a wheel folder
#   PATCH=work-800 bash bench/gpu.sh       # CPU side with a bench/variants.py patch
#   FULLPAGE_PAGES=6 bash bench/gpu.sh     # pages of the ROI vs full-page side by side (24)
#   RUN=service PROVIDER=cuda bash bench/gpu.sh   # the service on cuda:0 (WORKERS_PER_DEVICE, 8)
#   PARTS=/tmp/p bash bench/gpu.sh         # no index: bench/gpu_bundle.sh's parts, unpacked into
#                                          # $SITE (/tmp/site), with the system python
#
# 1. a venv (.venv-gpu, reusing system site-packages) with roi and its gpu extra
#    (onnxruntime-gpu, tensorrt) from wheels: $WHEELS when set, else the index pip is set up for;
# 2. nvidia-smi, the providers ORT sees;
# 3. python -m bench.gpu: builds the TensorRT engines through ORT's TensorRT EP with the
#    profiles in extractor/engines/ppocr.py (cached in .cache/trt), warms every shape, reports
#    crops/s at batch 1/8/32/128 and pages/s end to end with GPU utilisation and memory.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/.cache/gpu}
PROVIDER=${PROVIDER:-tensorrt}
PAGES=${PAGES:-2000}
VENV=${VENV:-.venv-gpu}
PY=${PY:-python3}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu.log") 2>&1
step() { echo "== $(date +%T) $*"; }

step "machine"
nvidia-smi || { echo "no nvidia-smi: not a GPU machine"; exit 1; }
nproc; free -g | head -2

export PYTHONUNBUFFERED=1
if [ -n "${PARTS:-}" ]; then
  # a machine with no package index (the device tool's): what its image lacks (onnxruntime-gpu,
  # pydantic, zxing-cpp, the rec model; bench/gpu_bundle.sh) unpacked into $SITE, first on the
  # path, and the CUDA/cuDNN libraries of the image's nvidia-* wheels on the loader's path
  SITE=${SITE:-/tmp/site}
  step "environment (system $PY, packages from $PARTS unpacked into $SITE)"
  mkdir -p "$SITE"
  cat "$PARTS"/part.* | "$PY" -c "
import sys, tarfile
tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall(sys.argv[1], filter='data')
" "$SITE" || exit 1
  export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
  NVIDIA_LIBS=$("$PY" - <<'PY'
import glob, os, site
dirs = {os.path.dirname(p) for sp in site.getsitepackages()
        for p in glob.glob(sp + "/nvidia/**/lib*.so*", recursive=True)}
print(":".join(sorted(dirs)))
PY
)
  export LD_LIBRARY_PATH="$NVIDIA_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  VPY=$PY
else
  VPY="$VENV/bin/python"
  step "environment ($VENV)"
  if [ ! -x "$VPY" ]; then
    "$PY" -m venv --system-site-packages "$VENV" || exit 1
    echo '*' > "$VENV/.gitignore"
  fi
  PIP=("$VPY" -m pip install -q)
  if [ -n "${WHEELS:-}" ]; then PIP+=(--no-index --find-links "$WHEELS"); fi
  # onnxruntime (CPU) and onnxruntime-gpu install the same module: keep only the GPU one
  "$VPY" -m pip uninstall -q -y onnxruntime 2>/dev/null || true
  "${PIP[@]}" -e '.[gpu]' || {
    echo "installing roi[gpu] failed; trying what is already importable"
  }
  "$VPY" -m pip uninstall -q -y onnxruntime 2>/dev/null || true
  "${PIP[@]}" --force-reinstall --no-deps onnxruntime-gpu 2>/dev/null || true
  # TensorRT's libraries from the tensorrt wheels, for ORT's TensorRT EP
  TRT_LIBS=$("$VPY" - <<'PY' 2>/dev/null
import importlib.util, os
for name in ("tensorrt_libs", "tensorrt"):
    spec = importlib.util.find_spec(name)
    if spec and spec.origin:
        print(os.path.dirname(spec.origin)); break
PY
  )
  if [ -n "$TRT_LIBS" ]; then export LD_LIBRARY_PATH="$TRT_LIBS:${LD_LIBRARY_PATH:-}"; fi
fi
"$VPY" -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())"

if [ "${RUN:-bench}" = service ]; then
  VPY=$VPY OUT=$OUT PROVIDER=$PROVIDER bash bench/gpu_service.sh
  exit
fi

step "benchmark (provider $PROVIDER)"
"$VPY" -m bench.gpu --provider "$PROVIDER" --pages "$PAGES" ${BATCHES:+--batches "$BATCHES"} --out "$OUT" ${PATCH:+--patch "$PATCH"} \
  ${FULLPAGE_PAGES:+--fullpage-pages "$FULLPAGE_PAGES"}
status=$?
if [ $status -ne 0 ] && [ "$PROVIDER" = tensorrt ]; then
  step "TensorRT run failed ($status); CUDA EP instead"
  "$VPY" -m bench.gpu --provider cuda --pages "$PAGES" ${BATCHES:+--batches "$BATCHES"} --out "$OUT" ${PATCH:+--patch "$PATCH"} \
  ${FULLPAGE_PAGES:+--fullpage-pages "$FULLPAGE_PAGES"}
  status=$?
fi
nvidia-smi --query-gpu=name,utilization.gpu,memory.used,memory.total --format=csv
step "done ($status): $OUT/gpu_results.md"
exit $status
