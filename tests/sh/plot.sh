#!/usr/bin/env bash
# scripts/plot.py: the series it reads from a --log equal the log's own records (every step's
# loss and tokens/s, every validation), and it writes a PNG of the size it draws (640 x 440)
# for one log, for two, and for a log of an older zerotrain (no configuration record);
# a file that is not a log, a log without steps, a missing file and --labels of the wrong
# count each end it with one message. Needs matplotlib (python3-matplotlib); skips (77)
# without it.
set -euo pipefail
PY=${PYTHON:-/usr/bin/python3}
$PY -c "import matplotlib" 2>/dev/null || { echo "SKIP: matplotlib is not installed for $PY"; exit 77; }
out=build/test_plot; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
ZT=build/zerotrain
T="--n-layer 2 --n-head 4 --n-embd 64 --n-ctx 64 --seq 32 --micro-batch 2 --lr 1e-3 --steps 6 --val-every 3"
$ZT $T --log $out/a.jsonl > $out/a.out 2>&1 || { cat $out/a.out; exit 1; }
$ZT $T --seed 2 --log $out/b.jsonl > $out/b.out 2>&1 || { cat $out/b.out; exit 1; }
tail -n +2 $out/a.jsonl > $out/old.jsonl   # as an older zerotrain wrote: no first record
fail=0
bad() { echo "FAIL $*"; fail=1; }

# the series against the log's records, read here on their own
$PY - $out/a.jsonl <<'EOF' || fail=1
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("plot", "scripts/plot.py")
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)
s = plot.read_log(sys.argv[1])
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in recs if "loss" in r]
vals = [r for r in recs if "val_loss" in r]
want = {"step": [r["step"] for r in steps], "loss": [r["loss"] for r in steps],
        "tokens_per_s": [r["tokens_per_s"] for r in steps],
        "val_step": [r["step"] for r in vals], "val_loss": [r["val_loss"] for r in vals]}
bad = [k for k in want if s[k] != want[k]]
if s["step"] != list(range(1, 7)) or s["val_step"] != [3, 6]:
    bad.append("steps %s, validations %s" % (s["step"], s["val_step"]))
if s["config"].get("steps") != 6 or s["config"].get("layout", {}).get("world") != 1:
    bad.append("config %s" % s["config"])
title = plot.title_of([s["config"]])
if title != "tiny: 2 layers, 4 heads, 64 channels; batch 2 x 1 x 32 tokens; dp 1 x pp 1 x tp 1":
    bad.append("title %r" % title)
print("FAIL read_log: %s" % bad if bad else "ok   read_log: the log's 6 steps and 2 validations")
sys.exit(1 if bad else 0)
EOF

png_size() { # prints "W H" of a PNG, or nothing
  $PY -c 'import struct,sys; b=open(sys.argv[1],"rb").read(24)
if b[:8]==b"\x89PNG\r\n\x1a\n" and b[12:16]==b"IHDR": print(*struct.unpack(">II", b[16:24]))' "$1"
}
for case in "one:$out/a.jsonl" "two:$out/a.jsonl $out/b.jsonl" "old:$out/old.jsonl"; do
  name=${case%%:*}; logs=${case#*:}
  $PY scripts/plot.py $logs -o $out/$name.png > $out/$name.out 2>&1 || { bad "$name: $(cat $out/$name.out)"; continue; }
  [ "$(png_size $out/$name.png)" = "640 440" ] && echo "ok   $name: a 640 x 440 PNG" ||
    bad "$name: $out/$name.png is not a 640 x 440 PNG ($(png_size $out/$name.png))"
done
grep -q "a: 6 steps, 2 validations, b: 6 steps, 2 validations" $out/two.out || bad "two: $(cat $out/two.out)"

# one message each, and no PNG
expect_refused() { # name pattern args...
  local name=$1 pat=$2; shift 2
  if $PY scripts/plot.py "$@" -o $out/$name.png > $out/$name.out 2>&1; then bad "$name: accepted"
  elif [ "$(grep -c "$pat" $out/$name.out)" = 1 ] && [ "$(wc -l < $out/$name.out)" = 1 ] && [ ! -e $out/$name.png ]; then
    echo "ok   $name refused: $(cat $out/$name.out)"
  else bad "$name: $(cat $out/$name.out)"; fi
}
echo "not json" > $out/text.txt
head -1 $out/a.jsonl > $out/header_only.jsonl
expect_refused not_json "is not JSON" $out/text.txt
expect_refused no_steps "holds no step records" $out/header_only.jsonl
expect_refused missing "is not a file" $out/nope.jsonl
expect_refused labels "names 1 logs but 2 were given" $out/a.jsonl $out/b.jsonl --labels x
exit $fail
