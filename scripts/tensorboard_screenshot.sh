#!/usr/bin/env bash
# docs/tensorboard_demo.png: the `make demo` run (8 ranks: --zero 1 --pp 4 --tp 2) and one rank
# on the same global batch, both written with --tensorboard, as the real TensorBoard page shows
# them, captured by a headless Chromium (Debian's chromium). TensorBoard comes from PyPI into
# build/venv_tensorboard (as tests/sh/tensorboard.sh). Not a test: run it by hand to refresh the
# picture (about 2 minutes on 2 cores).
#   bash scripts/tensorboard_screenshot.sh [OUT.png]   (default docs/tensorboard_demo.png)
set -euo pipefail
cd "$(dirname "$0")/.."
png=${1:-docs/tensorboard_demo.png}
out=build/tb_screenshot; rm -rf $out; mkdir -p $out/logs
venv=build/venv_tensorboard
if ! $venv/bin/python -c "import tensorboard" 2>/dev/null; then
  ${PYTHON:-/usr/bin/python3} -m venv $venv && $venv/bin/pip install -q tensorboard
fi
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome) ||
  { echo "tensorboard_screenshot: no chromium; apt-get install chromium"; exit 1; }
# the demo's flags (Makefile, `make demo`), with a validation every 25 steps as docs/demo_loss.png
DEMO=(--micro-batch 2 --grad-accum 4 --steps 300 --lr 1e-3 --val-every 25)
build/zerotrain launch -np 8 train --zero 1 --pp 4 --tp 2 "${DEMO[@]}" \
  --tensorboard $out/logs/8_ranks_zero1_pp4_tp2 > $out/demo8.out 2>&1
OMP_NUM_THREADS=2 build/zerotrain "${DEMO[@]}" --tensorboard $out/logs/1_rank > $out/demo1.out 2>&1
port=$((20000 + $$ % 20000))
$venv/bin/tensorboard --logdir $out/logs --host 127.0.0.1 --port $port > $out/tensorboard.log 2>&1 &
tb=$!
trap 'kill $tb 2>/dev/null' EXIT
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$port/data/runs" > /dev/null 2>&1 && break
  sleep 1
done
# the time-series page, filtered to the losses; virtual time lets the charts load and draw.
# Headless Chromium without SwiftShader's software GL left the charts empty (checked with
# Chromium 156 and TensorBoard 2.21); forceSVG asks TensorBoard for SVG charts where it can.
"$CHROME" --headless --no-sandbox --hide-scrollbars --window-size=1500,900 \
  --use-gl=swiftshader --enable-unsafe-swiftshader \
  --virtual-time-budget=30000 --screenshot="$png" \
  "http://127.0.0.1:$port/?forceSVG=true&smoothing=0&tagFilter=loss#timeseries" > $out/chromium.log 2>&1
echo "wrote $png (TensorBoard $($venv/bin/python -c 'import tensorboard; print(tensorboard.__version__)'), runs: $(ls $out/logs | tr '\n' ' '))"
