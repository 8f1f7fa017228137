#!/usr/bin/env bash
# The pipeline's figures and timeline (issue 36): a pp 2 run with --log and --trace.
# Every step record has "pp_idle_ms" and "pp_idle_pred_ms", one value >= 0 per stage. The
# trace holds, per rank, exactly its stage's schedule (the ops, in the list's order, with
# their micro-batches, as the schedule generator builds it independently here for 1F1B),
# with times that never go back and never overlap; its measured idle of the last step
# (span less compute) equals the log's last "pp_idle_ms" within 1 ms (both time the same
# step; the log's also counts the schedule's begin and end); and the simulator's records
# ("sim", "sim-zb-h1") cover every stage; the same for --schedule interleaved (below). scripts/plot_schedule.py draws each source (with
# matplotlib) and refuses a file that is not a trace with one message; an unwritable
# --trace path is one error before training.
set -euo pipefail
. tests/env.sh
out=build/test_schedule_trace; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe --allow-run-as-root"
T="--n-layer 4 --n-head 3 --n-embd 48 --vocab 256 --n-ctx 64 --seq 32 --steps 3
   --micro-batch 2 --grad-accum 4 --val-every 0"
$MPI -np 2 build/zerotrain $T --pp 2 --log $out/a.jsonl --trace $out/a.trace > $out/a.out 2>&1 \
    || { cat $out/a.out; exit 1; }
fail=0
/usr/bin/python3 - $out/a.jsonl $out/a.trace <<'EOF' || fail=1
import json, sys
log, trace = sys.argv[1], sys.argv[2]
steps = [json.loads(l) for l in open(log) if l.startswith('{"step"') and '"loss"' in l]
assert len(steps) == 3, f"{len(steps)} step records"
for r in steps:
    for k in ("pp_idle_ms", "pp_idle_pred_ms"):
        assert len(r[k]) == 2 and all(v >= 0 for v in r[k]), f"step {r['step']} {k} = {r[k]}"
recs = [json.loads(l) for l in open(trace)]
head = recs[0]
assert head["trace"] == "pipeline" and head["schedule"] == "1f1b" and head["pp"] == 2, head
m = head["micro_batches"]

def one_f1b(p, s, m):  # the 1F1B list (schedule.h), combined ops by their first half
    w = min(p - s - 1, m); first, last = s == 0, s == p - 1; L = []
    for k in range(w):
        L += ([] if first else [("RECV_FWD", k)]) + [("FWD", k)] + ([] if last else [("SEND_FWD", k)])
    steady = m - w
    if steady and not first: L.append(("RECV_FWD", w))
    for i in range(steady):
        L.append(("FWD", w + i))
        if not last: L.append(("SEND_FWD_RECV_BWD", w + i))
        L.append(("BWD", i))
        if not first: L.append(("SEND_BWD_RECV_FWD" if i + 1 < steady else "SEND_BWD", i))
    for k in range(steady, m):
        L += ([] if last else [("RECV_BWD", k)]) + [("BWD", k)] + ([] if first else [("SEND_BWD", k)])
    return L

for rank in (0, 1):
    acts = [r for r in recs if r.get("source") == "run" and r["rank"] == rank]
    got = [(r["op"], r["micro"]) for r in acts]
    want = one_f1b(2, acts[0]["stage"], m)
    assert got == want, f"rank {rank}: {got} != {want}"
    for a, b in zip(acts, acts[1:]):
        assert a["start_ms"] <= a["end_ms"] <= b["start_ms"], f"rank {rank}: {a} then {b}"
    span = acts[-1]["end_ms"] - acts[0]["start_ms"]
    busy = sum(r["end_ms"] - r["start_ms"] for r in acts if r["op"] in ("FWD", "BWD"))
    logged = steps[-1]["pp_idle_ms"][acts[0]["stage"]]
    assert abs((span - busy) - logged) < 1.0, f"rank {rank}: trace idle {span - busy}, log {logged}"
    print(f"rank {rank}: {len(acts)} actions, idle {span - busy:.2f} ms (log {logged:.2f})")
for src in ("sim", "sim-zb-h1"):
    st = {r["stage"] for r in recs if r.get("source") == src}
    assert st == {0, 1}, f"{src}: stages {st}"
    ops = {r["op"] for r in recs if r.get("source") == src}
    assert ops == ({"FWD", "BWD"} if src == "sim" else {"FWD", "BWD_B", "BWD_W"}), f"{src}: {ops}"
EOF
# --schedule interleaved (V 2): each rank's records are Megatron's interleaved order
# (src/parallel/schedule.h, written again here) with their chunks, the trace idle equals the
# log's, and the simulator's records name the chunks
$MPI -np 2 build/zerotrain $T --pp 2 --schedule interleaved --virtual-stages 2 \
    --partition 0:2,2:3,3:4,4:6 --log $out/i.jsonl --trace $out/i.trace > $out/i.out 2>&1 \
    || { cat $out/i.out; exit 1; }
/usr/bin/python3 - $out/i.jsonl $out/i.trace <<'EOF' || fail=1
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"step"') and '"loss"' in l]
recs = [json.loads(l) for l in open(sys.argv[2])]
head = recs[0]
assert head["schedule"] == "interleaved" and head["transport"] == "nonblocking", head
p, m, V = 2, head["micro_batches"], 2

def interleaved(s):  # schedule.h: virtual forward / backward j, warmup, steady, cooldown
    def step(j, bwd):
        micro, c = (j // (p * V)) * p + j % p, (j // p) % V
        c = V - 1 - c if bwd else c
        first, last = s == 0 and c == 0, s == p - 1 and c == V - 1
        if not bwd:
            return ([] if first else [("RECV_FWD", micro, c)]) + [("FWD", micro, c)] + \
                   ([] if last else [("SEND_FWD", micro, c)])
        return ([] if last else [("RECV_BWD", micro, c)]) + [("BWD", micro, c)] + \
               ([] if first else [("SEND_BWD", micro, c)])
    total = m * V
    w = min((p - s - 1) * 2 + (V - 1) * p, total)
    L = [a for j in range(w) for a in step(j, 0)]
    for i in range(total - w):
        L += step(w + i, 0) + step(i, 1)
    return L + [a for j in range(total - w, total) for a in step(j, 1)]

for rank in (0, 1):
    acts = [r for r in recs if r.get("source") == "run" and r["rank"] == rank]
    got = [(r["op"], r["micro"], r["chunk"]) for r in acts]
    assert got == interleaved(acts[0]["stage"]), f"rank {rank}: {got}"
    span = acts[-1]["end_ms"] - acts[0]["start_ms"]
    busy = sum(r["end_ms"] - r["start_ms"] for r in acts if r["op"] in ("FWD", "BWD"))
    logged = steps[-1]["pp_idle_ms"][acts[0]["stage"]]
    # the log's idle also holds the schedule's end, where the ring waits for its last sends
    # to be received (a 1F1B run's blocking sends completed inside the actions): it can only
    # be larger
    assert span - busy < logged + 1.0, f"rank {rank}: trace idle {span - busy}, log {logged}"
    print(f"interleaved rank {rank}: {len(acts)} actions, idle {span - busy:.2f} ms (log {logged:.2f})")
sim = [r for r in recs if r.get("source") == "sim"]
assert {r["stage"] for r in sim} == {0, 1} and {r["chunk"] for r in sim} == {0, 1}, "sim chunks"
EOF
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  /usr/bin/python3 scripts/plot_schedule.py $out/i.trace -o $out/i.png > /dev/null && [ -s $out/i.png ] \
      || { echo "FAIL: no interleaved timeline"; fail=1; }
  for s in run sim sim-zb-h1; do
    /usr/bin/python3 scripts/plot_schedule.py $out/a.trace --source $s -o $out/$s.png > /dev/null \
        && [ -s $out/$s.png ] || { echo "FAIL: no timeline for $s"; fail=1; }
  done
else
  echo "(matplotlib missing: the drawing is not checked)"
fi
msg=$(/usr/bin/python3 scripts/plot_schedule.py $out/a.jsonl -o $out/x.png 2>&1) && fail=1
echo "$msg" | grep -q "no trace header" || { echo "FAIL: a log read as a trace: $msg"; fail=1; }
msg=$(build/zerotrain $T --trace /nonexistent/dir/t.trace 2>&1) && fail=1
[ "$(echo "$msg" | grep -c "cannot write the trace file")" = 1 ] \
    || { echo "FAIL: unwritable --trace: $msg"; fail=1; }
[ $fail = 0 ] && echo "PASS schedule_trace"
exit $fail
