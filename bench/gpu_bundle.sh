#!/usr/bin/env bash
# Packs what a lent GPU machine lacks for bench/gpu.sh into parts small enough for the device
# tool (it reaches no package index; a call takes at most 64 MiB with the working tree):
# onnxruntime-gpu, pydantic, zxing-cpp and rapidocr (its PP-OCR models; the full-page OCR side
# by side) with its needs, and the service's packages the image lacks (litestar, uvicorn), for
# the device's Python.
#
#   bash bench/gpu_bundle.sh        # -> .gpu/p0 .. .gpu/p4 (git-ignored), ~45 MB each
#
# Then one device call per part, back to back (an idle machine goes back after 30 s, and what
# was copied with it):
#   run(command="mkdir -p /tmp/p && cp .gpu/p0/* /tmp/p/", carry=[".gpu/p0"])  ... p1 to p3
#   run(command="cp .gpu/p4/* /tmp/p/ && PARTS=/tmp/p PROVIDER=cuda bash bench/gpu.sh",
#       carry=[".gpu/p4"])
# The device image (2026-11) has CUDA 13, cuDNN 9 and cuBLAS as nvidia-* wheels beside PyTorch,
# which the CUDA EP of onnxruntime-gpu 1.31 (built for CUDA 13) loads, and onnx (the argmax on
# the device rewrites the model with it); it has no TensorRT.
set -euo pipefail
cd "$(dirname "$0")/.."
PYV=${PYV:-3.12}                       # the device image's Python
ORT=${ORT:-onnxruntime-gpu==1.31.1}
NPARTS=${NPARTS:-5}  # with the ~16 MB working tree, five parts fit a call's 64 MiB
DEST=${DEST:-.gpu}
VPY=${VPY:-.venv/bin/python}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pins=$("$VPY" - <<'PY'
from importlib.metadata import version
print(" ".join(f"{n}=={version(n)}" for n in
      ("pydantic", "pydantic-core", "annotated-types", "typing-inspection", "zxing-cpp",
       "rapidocr", "colorlog", "omegaconf", "pyclipper", "shapely",
       # the service (RUN=service, bench/gpu_service.sh); the image has the rest of its needs
       "litestar", "msgspec", "multipart", "uvicorn", "sniffio")))
PY
)
echo "downloading $ORT $pins for Python $PYV"
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$work/wheels" "$ORT" $pins
mkdir -p "$work/site"
for wheel in "$work"/wheels/*.whl; do (cd "$work/site" && python3 -m zipfile -e "$wheel" .); done
# not used by the bench: ORT's Python tools, and the C API library the Python module does not load
rm -rf "$work"/site/onnxruntime/{transformers,tools,quantization,datasets} \
  "$work"/site/onnxruntime/capi/libonnxruntime.so.*
du -sh "$work/site"
tar -C "$work/site" -cf - . | xz -T2 -7 > "$work/bundle.tar.xz"
(cd "$work" && split -n "$NPARTS" -d bundle.tar.xz part.)
rm -rf "$DEST"
for i in $(seq 0 $((NPARTS - 1))); do
  mkdir -p "$DEST/p$i"
  mv "$work/part.$(printf %02d "$i")" "$DEST/p$i/"
done
ls -l "$DEST"/p*/
