#!/usr/bin/env bash
# 8-bit AdamW bench: (1) convergence against fp32 AdamW on the embedded default data (the
# tiny byte-level GPT-2, 300 steps), single rank and in the --zero 1 --pp 2 --tp 2 layout
# (8 ranks: dp 2 x pp 2 x tp 2, the same global batch of 8 sequences), validation loss
# compared and both curves plotted in
# bench/adamw8bit_loss.png; (2) optimizer bytes per parameter per rank, fp32 vs 8-bit,
# --zero 0/1, dp 1/2/4/8, against the formulas.
#
#   bash bench/adamw8bit.sh      # prints markdown; writes bench/adamw8bit_loss.png
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/bench; mkdir -p $OUT
MPI="mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1"
STEPS=${STEPS:-300}
COMMON="--steps $STEPS --micro-batch 8 --seq 128 --lr 1e-3 --warmup 20 --val-every 50 --val-batches 4"
for o in adamw adamw8bit; do
  OMP_NUM_THREADS=2 build/zerotrain $COMMON --optim $o --log $OUT/conv_${o}_1.jsonl > /dev/null
  $MPI -np 8 build/zerotrain $COMMON --optim $o --grad-accum 2 --micro-batch 2 --zero 1 --pp 2 \
      --tp 2 --log $OUT/conv_${o}_pp2.jsonl > /dev/null
done
echo "### Convergence: validation loss after $STEPS steps (tiny GPT-2, embedded default data)"
echo
echo "| layout | adamw (fp32) | adamw8bit | 8-bit / fp32 |"
echo "|---|---|---|---|"
for l in 1 pp2; do
  a=$(grep val_loss $OUT/conv_adamw_$l.jsonl | tail -1 | sed 's/.*val_loss"://; s/}//')
  b=$(grep val_loss $OUT/conv_adamw8bit_$l.jsonl | tail -1 | sed 's/.*val_loss"://; s/}//')
  name=$([ $l = 1 ] && echo "single rank" || echo "dp 2 x pp 2 x tp 2, --zero 1")
  echo "| $name | $a | $b | $(awk "BEGIN{printf \"%.4f\", $b/$a}") |"
done
/usr/bin/python3 - <<'PY' || echo "(no plot: matplotlib missing)"
import json, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(7, 4))
for opt, color in (("adamw", "tab:blue"), ("adamw8bit", "tab:orange")):
    for lay, style in (("1", "-"), ("pp2", "--")):
        rows = [json.loads(l) for l in open("build/bench/conv_%s_%s.jsonl" % (opt, lay))]
        tr = [(r["step"], r["loss"]) for r in rows if "loss" in r]
        va = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
        lab = "%s, %s" % (opt, "single rank" if lay == "1" else "dp2 x pp2 x tp2, zero1")
        ax.plot(*zip(*tr), style, color=color, alpha=0.6, lw=1, label=lab + " (train)")
        ax.plot(*zip(*va), style, color=color, marker="o", lw=2, label=lab + " (val)")
ax.set_xlabel("step"); ax.set_ylabel("loss (nats/token)"); ax.set_title("fp32 AdamW vs 8-bit AdamW")
ax.legend(fontsize=7); fig.tight_layout(); fig.savefig("bench/adamw8bit_loss.png", dpi=110)
PY
echo
echo "### Optimizer bytes per parameter, per rank (P = padded flat parameter count)"
echo
echo "Model: gpt2-like 6 x 384, vocab 50257 (29.97M parameters). Formulas: fp32 8 bytes/param,"
echo "8-bit 2 bytes/param + 8 bytes per 256-value block (an fp32 absmax for m and one for v) for tensors of >= 4096"
echo "values, fp32 for the rest; divided by dp with --zero 1."
echo
echo "| dp | zero | adamw bytes/param | adamw8bit bytes/param | ratio |"
echo "|---|---|---|---|---|"
[ -f $OUT/pipe_tokens.bin ] || /usr/bin/python3 bench/make_tokens.py $OUT/pipe_tokens.bin $((1 << 18))
M="--n-layer 6 --n-head 6 --n-embd 384 --vocab 50257 --n-ctx 64 --seq 64 --micro-batch 1 --steps 1 --val-every 0"
for dp in 1 2 4 8; do
  for z in 0 1; do
    row="| $dp | $z |"
    vals=()
    for o in adamw adamw8bit; do
      $MPI -np $dp build/zerotrain $M --zero $z --optim $o --data $OUT/pipe_tokens.bin > $OUT/opt_${o}_${dp}_$z.out 2>&1
      bytes=$(grep "optimizer bytes per rank" $OUT/opt_${o}_${dp}_$z.out | awk '{print $5}')
      params=$(grep "^memory (rank 0)" $OUT/opt_${o}_${dp}_$z.out | sed -E 's/.*params ([0-9.]+)M.*/\1/')
      vals+=("$(awk "BEGIN{printf \"%.3f\", $bytes / ($params * 1048576 / 4)}")")
    done
    echo "$row ${vals[0]} | ${vals[1]} | $(awk "BEGIN{printf \"%.2fx\", ${vals[0]}/${vals[1]}}") |"
  done
done
