#!/usr/bin/env bash
# --tensorboard DIR: TensorBoard's own event reader (its Python package, in this test's virtual
# environment build/venv_tensorboard: pip install tensorboard) reads a 2-rank run's event file
# (one file: rank 0 writes) and every scalar equals the --log's: loss, validation loss, TFLOP/s,
# MFU and memory (MiB of the log's bytes) as the same float32; lr, grad norm, step ms and
# tokens/s to the digits the log prints. A flipped byte fails TensorBoard's CRC check, so the
# checksums are checked. The step record's TFLOP/s and MFU are in the log. SKIPs with the
# reason where tensorboard cannot be installed.
set -u
cd "$(dirname "$0")/../.."
ZT=${ZT:-build/zerotrain}
out=build/test_tensorboard; rm -rf $out; mkdir -p $out
venv=build/venv_tensorboard
if ! $venv/bin/python -c "import tensorboard" 2>/dev/null; then
  ${PYTHON:-/usr/bin/python3} -m venv $venv > $out/venv.log 2>&1 &&
  timeout 600 $venv/bin/pip install -q tensorboard >> $out/venv.log 2>&1 ||
  { echo "SKIP: cannot install tensorboard into $venv: $(tail -1 $out/venv.log)"; exit 77; }
fi
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found"; exit 77; }
OMP_NUM_THREADS=1 mpirun --oversubscribe --allow-run-as-root -np 2 $ZT --steps 6 --val-every 3 \
  --micro-batch 2 --peak-tflops 0.5 --tensorboard $out/tb --log $out/run.jsonl > $out/run.out 2>&1 < /dev/null ||
  { echo "FAIL: the run"; tail -5 $out/run.out; exit 1; }
n=$(ls $out/tb | grep -c tfevents)
[ "$n" -eq 1 ] || { echo "FAIL: $n event files (rank 0 alone writes one)"; exit 1; }
$venv/bin/python - $out/run.jsonl $out/tb <<'PYEOF' || exit 1
import json, math, struct, sys
from tensorboard.backend.event_processing import event_accumulator as ea
log, tb = sys.argv[1], sys.argv[2]
acc = ea.EventAccumulator(tb, size_guidance={ea.SCALARS: 0})
acc.Reload()
tags = set(acc.Tags()["scalars"])
f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
steps = [r for r in map(json.loads, open(log)) if "loss" in r]
vals = [r for r in map(json.loads, open(log)) if "val_loss" in r]
assert len(steps) == 6 and len(vals) == 2, (len(steps), len(vals))
# log key -> (tag, what TensorBoard must hold, tolerance: half the log's last printed digit)
def expect(r):
    e = {"train/loss": (f32(r["loss"]), 0), "perf/tflops": (f32(r["tflops"]), 0),
         "perf/mfu": (f32(r["mfu"]), 0),
         "train/lr": (r["lr"], 0.5e-6 * abs(r["lr"])), "train/grad_norm": (r["grad_norm"], 0.5e-6),
         "perf/step_ms": (r["ms"], 0.5e-3), "perf/tokens_per_s": (r["tokens_per_s"], 0.05)}
    for cat, b in r["mem"].items():
        e[f"memory/{cat}_mib"] = (f32(b / 1048576.0), 0)
    return e
checked = 0
for tag in expect(steps[0]):
    got = {ev.step: ev.value for ev in acc.Scalars(tag)}
    assert sorted(got) == [r["step"] for r in steps], (tag, sorted(got))
    for r in steps:
        want, tol = expect(r)[tag]
        # float32 storage: the value's own rounding on top of the log's digits. The log prints
        # the double to 9 digits; where it lies within 5e-10 of a float32 rounding midpoint,
        # those digits round to the float32 one ulp (2^-23 relative) away from the double's
        ok = abs(got[r["step"]] - want) <= (abs(want) * 2**-23 if tol == 0 else tol + abs(want) * 2**-24)
        assert ok, (tag, r["step"], got[r["step"]], want, tol)
        checked += 1
got = {ev.step: ev.value for ev in acc.Scalars("val/loss")}
assert got == {v["step"]: f32(v["val_loss"]) for v in vals}, (got, vals)
checked += len(vals)
assert "perf/mfu" in tags and all(s["tflops"] > 0 and math.isclose(s["mfu"], s["tflops"] / (0.5 * 2), rel_tol=1e-8) for s in steps)
print(f"ok: TensorBoard {__import__('tensorboard').__version__} read {checked} scalars "
      f"({len(tags)} tags, steps 1-6 and 2 validations) equal to the log's")
PYEOF
# a flipped byte in the last record's data: TensorBoard's reader reports the CRC mismatch
f=$(ls $out/tb/*tfevents*)
cp "$f" $out/corrupt.tfevents
size=$(stat -c %s $out/corrupt.tfevents)
printf 'X' | dd of=$out/corrupt.tfevents bs=1 seek=$((size - 10)) conv=notrunc 2> /dev/null
$venv/bin/python - $out/corrupt.tfevents <<'PYEOF' || exit 1
import sys
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.compat.tensorflow_stub import errors
try:
    n = sum(1 for _ in event_file_loader.LegacyEventFileLoader(sys.argv[1]).Load())
except errors.DataLossError as e:
    print("ok: a flipped byte fails TensorBoard's check:", e); sys.exit(0)
# the loader may log the loss and stop instead of raising: then the last event is missing
print("ok: a flipped byte drops the record (%d events read of 9)" % n) if n < 9 else sys.exit("FAIL: corrupt record read")
PYEOF
