#!/usr/bin/env bash
# The service itself on a GPU (run by `RUN=service bash bench/gpu.sh`, which sets up $VPY): the
# API with WORKERS_PER_DEVICE workers on cuda:0, each warming its shapes before /ready; then the
# fields it answers over the fixtures (bench/service_eval.py), its throughput (bench/service.py),
# the GPU's memory, and the end of its log. SERVICE_ARGS replaces the device arguments (e.g.
# "--workers 2" to try the script on a CPU).
set -uo pipefail
cd "$(dirname "$0")/.."
VPY=${VPY:-python3}
OUT=${OUT:-$PWD/.cache/gpu}
PROVIDER=${PROVIDER:-cuda}
WPD=${WORKERS_PER_DEVICE:-8}
SERVICE_ARGS=${SERVICE_ARGS:---device cuda:0 --workers-per-device $WPD --gpu-provider $PROVIDER}
URL=http://127.0.0.1:8077
mkdir -p "$OUT"
step() { echo "== $(date +%T) $*"; }

step "the service: $SERVICE_ARGS"
# shellcheck disable=SC2086
"$VPY" -m service $SERVICE_ARGS --port 8077 --batch-max-size 16 > "$OUT/service.log" 2>&1 &
server=$!
ready=0
for _ in $(seq 300); do
  if "$VPY" -c "import httpx, sys; sys.exit(httpx.get('$URL/ready').status_code != 200)" \
    2>/dev/null; then ready=1; break; fi
  kill -0 $server 2>/dev/null || break
  sleep 1
done
step "ready: $ready"
"$VPY" -c "import httpx; print(httpx.get('$URL/health').text)" || true
if [ $ready = 1 ]; then
  "$VPY" -m bench.service_eval --url "$URL" fixtures/clean fixtures/light fixtures/medium
  "$VPY" bench/service.py --url "$URL" --no-baseline --docs 'fixtures/medium/*.jpg' \
    --distinct 12 --requests "${REQUESTS:-192}" --concurrency "${CONCURRENCY:-1,16,64}" \
    --json "$OUT/service.json"
fi
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,utilization.gpu,memory.used,memory.total --format=csv
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv
fi
kill $server
wait $server
tail -n 30 "$OUT/service.log"
step "done (service ready: $ready)"
[ $ready = 1 ]
