#!/usr/bin/env python3
"""Draws one training step's pipeline timeline from a zerotrain --trace file: one row per
stage, a box per compute action (F forward, B backward, b input-gradient and W
weight-gradient halves), coloured by kind and labelled with the micro-batch, as the
zero-bubble paper's figures; transfers and waits are the gaps. Under --schedule interleaved
a label also names the chunk (F3:1 is micro-batch 3 on the stage's chunk 1) and the boxes of
odd chunks are hatched.

    plot_schedule.py TRACE [-o timeline.png] [--source run|sim|sim-zb-h1] [--title TEXT]

--source picks the records: "run" (default) the measured step (stage rows from the ranks
of dp 0 and tp 0), "sim" the simulator's timeline of the same schedule from the step's
measured mean forward and backward per stage, "sim-zb-h1" the simulator's ZB-H1 from the
same costs with each backward split evenly into b and W. Under the boxes: each row's idle
time (the step's span less its compute). Needs matplotlib (Debian: python3-matplotlib);
run it with /usr/bin/python3 where another python lacks it."""
import argparse
import json
import sys

COLOURS = {"FWD": "#4472c4", "BWD": "#70ad47", "BWD_B": "#5b9bd5", "BWD_W": "#a9d18e"}
LABELS = {"FWD": "F", "BWD": "B", "BWD_B": "b", "BWD_W": "W"}


def read_trace(path, source):
    """The header record and the compute actions of `source`: {stage: [(op, micro, chunk,
    start, end)]} in ms."""
    header, rows = None, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_schedule.py: {path} line {n} is not JSON ({e}): "
                         "give a file written by zerotrain --trace")
            if "trace" in r:
                header = r
                continue
            if r.get("source") != source or r.get("op") not in COLOURS:
                continue
            if source == "run" and (r.get("dp", 0) != 0 or r.get("tp", 0) != 0):
                continue
            rows.setdefault(r["stage"], []).append(
                (r["op"], r["micro"], r.get("chunk", 0), r["start_ms"], r["end_ms"]))
    if header is None:
        sys.exit(f"plot_schedule.py: {path} has no trace header: give a file written by "
                 "zerotrain --trace")
    if not rows:
        sys.exit(f"plot_schedule.py: {path} has no '{source}' records (sources: run, sim, "
                 "sim-zb-h1)")
    return header, rows


def draw(header, rows, source, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    p = len(rows)
    span = max(e for acts in rows.values() for (_, _, _, _, e) in acts)
    start = min(s for acts in rows.values() for (_, _, _, s, _) in acts)
    chunks = 1 + max(c for acts in rows.values() for (_, _, c, _, _) in acts)
    fig, ax = plt.subplots(figsize=(12, 0.6 * p + 1.6), dpi=100)
    for stage, acts in sorted(rows.items()):
        y = p - 1 - stage
        busy = 0.0
        for op, micro, chunk, s, e in acts:
            busy += e - s
            ax.broken_barh([(s, e - s)], (y + 0.1, 0.8), facecolors=COLOURS[op],
                           edgecolors="black", linewidth=0.4, hatch="//" if chunk % 2 else None)
            label = f"{LABELS[op]}{micro}" + (f":{chunk}" if chunks > 1 else "")
            if e - s > span / 80:
                ax.text((s + e) / 2, y + 0.5, label, ha="center",
                        va="center", fontsize=7, color="white" if op == "FWD" else "black")
        ax.text(span * 1.005, y + 0.5, f"idle {span - start - busy:.1f} ms", va="center",
                fontsize=8)
    ax.set_yticks([p - 1 - s + 0.5 for s in sorted(rows)])
    ax.set_yticklabels([f"stage {s}" for s in sorted(rows)])
    ax.set_xlim(start, span * 1.12)
    ax.set_xlabel("ms")
    kinds = sorted({op for acts in rows.values() for (op, _, _, _, _) in acts},
                   key=list(COLOURS).index)
    ax.legend(handles=[Patch(facecolor=COLOURS[k], label=LABELS[k]) for k in kinds],
              loc="upper left", bbox_to_anchor=(0, -0.25 if p < 4 else -0.12), ncol=4,
              fontsize=8, frameon=False)
    what = {"run": "measured", "sim": "simulated from the measured costs",
            "sim-zb-h1": "ZB-H1 simulated from the measured costs (backward split evenly)"}
    schedule = "zb-h1" if source == "sim-zb-h1" else header.get("schedule", "?")
    if chunks > 1 and source != "sim-zb-h1":
        schedule += f" (V = {chunks})"
    ax.set_title(title or f"{schedule}, pp {header.get('pp')}, {header.get('micro_batches')} "
                 f"micro-batches, {header.get('transport')} transfers: {what[source]}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--out", default="timeline.png")
    ap.add_argument("--source", default="run", choices=["run", "sim", "sim-zb-h1"])
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    try:
        header, rows = read_trace(a.trace, a.source)
    except OSError as e:
        sys.exit(f"plot_schedule.py: cannot read {a.trace}: {e.strerror}")
    draw(header, rows, a.source, a.out, a.title)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
