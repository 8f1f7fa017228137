"""The memory bench's report (bench/memory.sh): per rank and category, the planner's
prediction (`zerotrain memory --json`) against what the trainer measured (the JSON-lines
record each rank writes to --log at the end of training), and the savings tables
(--zero 0 -> 1 across dp, fp32 -> 8-bit optimizer, partition methods per stage, chunked
loss, fp32 -> bf16 per layout, and the planner's model state per parameter against dp for
fp32 and bf16 + ZeRO-1), as one markdown section on stdout and a PNG.

    /usr/bin/python3 bench/memory_report.py MANIFEST [--png PATH] [--dry]
    /usr/bin/python3 bench/memory_report.py --selftest

MANIFEST holds one JSON object per line, one per bench cell:
    {"name": "zero_dp2_z1", "group": "zero", "world": 2, "flags": "--dp 2 --zero 1 ...",
     "plan": "build/bench/mem_zero_dp2_z1.plan.json", "log": "build/bench/....jsonl"}
The trainer's record, one line per rank in the log (other lines are the step records):
    {"rank": r, "dp_rank": d, "pp_rank": p, "tp_rank": t,
     "mem_peak": {"params": bytes, "grads": ..., "optimizer": ..., "activations": ...,
                  "workspace": ..., "comm": ..., "logits": ...},
     "mem_peak_total": bytes, "rss_peak": bytes}
A cell with "plan_only": true (group "state") was planned, never trained: it is in the
model-state table and the plot's third panel only.
--dry: no logs (nothing was trained); the tables show the predictions only.
"""
import json
import os
import sys

CATS = ["params", "grads", "optimizer", "activations", "workspace", "comm", "logits"]
MIB = 1048576.0
# Model-state bytes per element of the flat parameter buffer, by (param dtype, optimizer,
# zero): params + grads + the optimizer's bytes per element of its range (fp32 AdamW: m, v;
# bf16: an fp32 master too; 8-bit: m, v one byte each plus a 4-byte absmax per 256-element
# block each, 2.03), the optimizer over dp under ZeRO-1 (docs/design.md, "bf16").
STATE_FORMULA = {
    ("fp32", "adamw", 0): ("16", lambda dp: 16.0),
    ("fp32", "adamw", 1): ("4+4+8/dp", lambda dp: 8 + 8 / dp),
    ("bf16", "adamw", 1): ("2+2+12/dp", lambda dp: 4 + 12 / dp),
    ("bf16", "adamw8bit", 1): ("2+2+(4+2.03)/dp", lambda dp: 4 + (4 + 2 * (1 + 4 / 256)) / dp),
}


def load_plan(path):
    """The `zerotrain memory --json` report: {rank: plan entry}, and the whole report."""
    with open(path) as f:
        plan = json.load(f)
    ranks = {r["rank"]: r for r in plan["ranks"]}
    if len(ranks) != plan["layout"]["world"]:
        raise ValueError("%s: %d rank entries for a world of %d"
                         % (path, len(ranks), plan["layout"]["world"]))
    return ranks, plan


def load_records(path, world):
    """The trainer's end-of-run records in a --log file: {rank: record}. Every rank must
    have exactly one, with every category."""
    recs = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            if "mem_peak" not in obj:
                continue  # a step or validation record
            r = obj["rank"]
            if r in recs:
                raise ValueError("%s:%d: a second record for rank %d" % (path, n, r))
            missing = [c for c in CATS if c not in obj["mem_peak"]]
            if missing:
                raise ValueError("%s:%d: rank %d's mem_peak lacks %s" % (path, n, r, missing))
            recs[r] = obj
    if sorted(recs) != list(range(world)):
        raise ValueError("%s: records for ranks %s, expected 0..%d (the trainer writes one "
                         "per rank at the end of training)" % (path, sorted(recs), world - 1))
    return recs


def compare(plan_ranks, recs):
    """Rows per rank: predicted and measured bytes per category and in total."""
    rows = []
    for r in sorted(plan_ranks):
        p = plan_ranks[r]
        m = recs.get(r) if recs else None
        if m is not None:
            for k in ("dp_rank", "pp_rank", "tp_rank"):
                if m[k] != p[k]:
                    raise ValueError("rank %d: %s %d in the log, %d in the plan" % (r, k, m[k], p[k]))
        rows.append({
            "rank": r, "dp": p["dp_rank"], "pp": p["pp_rank"], "tp": p["tp_rank"],
            "pred": {c: p["bytes"][c] for c in CATS},
            "meas": {c: m["mem_peak"][c] for c in CATS} if m else None,
            "pred_tracked": p["tracked"], "pred_peak": p["peak"],
            "meas_total": m["mem_peak_total"] if m else None,
            "rss": m["rss_peak"] if m else None,
            "opt_split": p["optimizer_split"], "window": p["comm_window"],
        })
    return rows


def mib(b):
    return "%.1f" % (b / MIB)


def cell(pred, meas):
    """"12.3" when measured equals predicted, else "12.3 (+336 B)": the measurement and
    its difference from the prediction in bytes; the prediction alone without a
    measurement."""
    if meas is None:
        return mib(pred)
    if meas == pred:
        return mib(meas)
    return "%s (%+.0f B)" % (mib(meas), meas - pred)


def rank_table(cells):
    out = ["| cell | rank (dp, pp, tp) | " + " | ".join(CATS) +
           " | total, allocator | peak incl. MPI windows / RSS | exact |",
           "|" + "---|" * (len(CATS) + 5)]
    exact_all = True
    for c in cells:
        for row in c["rows"]:
            meas = row["meas"]
            exact = meas is not None and all(meas[k] == row["pred"][k] for k in CATS)
            exact_all &= exact
            cols = [cell(row["pred"][k], meas[k] if meas else None) for k in CATS]
            total = cell(row["pred_tracked"], row["meas_total"])
            rss = "%s / %s" % (mib(row["pred_peak"]), mib(row["rss"]) if row["rss"] else "-")
            out.append("| %s | %d (%d, %d, %d) | %s | %s | %s | %s |" % (
                c["name"], row["rank"], row["dp"], row["pp"], row["tp"], " | ".join(cols),
                total, rss, "yes" if exact else ("-" if meas is None else "no")))
    return out, exact_all


def value(row, cat, measured):
    if measured and row["meas"] is not None:
        return row["meas"][cat]
    return row["pred"][cat]


def state(row, measured):
    return sum(value(row, c, measured) for c in ("params", "grads", "optimizer"))


def savings_tables(cells, measured):
    by = {c["name"]: c for c in cells}
    src = "measured" if measured else "predicted"
    out = []
    # --zero 0 -> 1 across dp
    dps = sorted({c["world"] for c in cells if c["group"] == "zero"})
    if dps:
        out += ["", "**--zero 0 -> 1 across dp** (%s, MiB per rank, the largest rank):" % src, "",
                "| dp | optimizer, zero 0 | optimizer, zero 1 | model state, zero 0 | model state, zero 1 | saved |",
                "|---|---|---|---|---|---|"]
        for dp in dps:
            z0, z1 = by.get("zero_dp%d_z0" % dp), by.get("zero_dp%d_z1" % dp)
            if not z0 or not z1:
                continue
            o0 = max(value(r, "optimizer", measured) for r in z0["rows"])
            o1 = max(value(r, "optimizer", measured) for r in z1["rows"])
            s0 = max(state(r, measured) for r in z0["rows"])
            s1 = max(state(r, measured) for r in z1["rows"])
            out.append("| %d | %s | %s | %s | %s | %.0f%% |" % (dp, mib(o0), mib(o1), mib(s0), mib(s1),
                                                              100 * (1 - s1 / s0)))
    # fp32 -> 8-bit
    pairs = [(c["name"], by.get(c["name"].replace("adamw_", "adamw8bit_")))
             for c in cells if c["group"] == "optim" and "_adamw_" in c["name"] + "_"]
    pairs = [(a, b) for a, b in pairs if b]
    if pairs:
        out += ["", "**fp32 AdamW -> 8-bit AdamW** (%s, MiB per rank, the largest rank):" % src, "",
                "| layout | optimizer, fp32 | optimizer, 8-bit | 8-bit / fp32 | allocator total, fp32 | 8-bit |",
                "|---|---|---|---|---|---|"]
        for a, b in pairs:
            ca = by[a]
            oa = max(value(r, "optimizer", measured) for r in ca["rows"])
            ob = max(value(r, "optimizer", measured) for r in b["rows"])
            ta = max(sum(value(r, c, measured) for c in CATS) for r in ca["rows"])
            tb = max(sum(value(r, c, measured) for c in CATS) for r in b["rows"])
            out.append("| %s | %s | %s | %.3f | %s | %s |" % (ca["label"], mib(oa), mib(ob), ob / oa,
                                                             mib(ta), mib(tb)))
    # fp32 -> bf16 per layout
    pairs = [(c, by.get(c["name"][:-len("fp32")] + "bf16")) for c in cells
             if c["group"] == "bf16" and c["name"].endswith("_fp32")]
    pairs = [(a, b) for a, b in pairs if b]
    if pairs:
        out += ["", "**fp32 -> bf16 (--param-dtype)** (%s, MiB, the largest rank of each):" % src,
                "", "| layout | model state, fp32 | bf16 | bf16 / fp32 | allocator total, fp32 "
                "| bf16 | bf16 / fp32 |", "|---|---|---|---|---|---|---|"]
        for a, b in pairs:
            sa = max(state(r, measured) for r in a["rows"])
            sb = max(state(r, measured) for r in b["rows"])
            ta = max(sum(value(r, k, measured) for k in CATS) for r in a["rows"])
            tb = max(sum(value(r, k, measured) for k in CATS) for r in b["rows"])
            out.append("| %s | %s | %s | %.3f | %s | %s | %.3f |" % (
                a["label"].rsplit(", ", 1)[0], mib(sa), mib(sb), sb / sa, mib(ta), mib(tb),
                tb / ta))
    # activation recomputation and sequence parallelism
    rc = [c for c in cells if c["group"] == "recompute"]
    if rc:
        out += ["", "**--recompute and --sequence-parallel** (%s, MiB, the largest rank of each; "
                "micro-batch 8):" % src, "",
                "| layout, --recompute | activations | workspace | allocator total | activations "
                "vs none |", "|---|---|---|---|---|"]
        none = {}
        for c in rc:
            top = max(c["rows"], key=lambda r: sum(value(r, k, measured) for k in CATS))
            a = value(top, "activations", measured)
            lay = c["label"].rsplit(", ", 1)[0]
            none.setdefault(lay, a)
            out.append("| %s | %s | %s | %s | %.3f |" % (
                c["label"], mib(a), mib(value(top, "workspace", measured)),
                mib(sum(value(top, k, measured) for k in CATS)), a / none[lay]))
    # partition methods per stage
    parts = [c for c in cells if c["group"] == "partition"]
    if parts:
        pp = max(r["pp"] for r in parts[0]["rows"]) + 1
        out += ["", "**Partition methods, per stage** (%s allocator bytes in MiB; dp 1 so one rank "
                "per stage):" % src, "",
                "| --partition | " + " | ".join("stage %d" % s for s in range(pp)) +
                " | largest | largest / smallest |", "|---|" + "---|" * (pp + 2)]
        for c in parts:
            tot = [0.0] * pp
            for r in c["rows"]:
                tot[r["pp"]] = max(tot[r["pp"]], sum(value(r, k, measured) for k in CATS))
            out.append("| %s | %s | %s | %.2f |" % (c["label"], " | ".join(mib(t) for t in tot),
                                                   mib(max(tot)), max(tot) / min(tot)))
    # chunked loss
    loss = [c for c in cells if c["group"] == "loss"]
    if loss:
        out += ["", "**Chunked loss** (%s, MiB, the last stage):" % src, "",
                "| --loss-chunk | logits | allocator total |", "|---|---|---|"]
        for c in loss:
            r = c["rows"][-1]
            out.append("| %s | %s | %s |" % (c["label"], mib(value(r, "logits", measured)),
                                             mib(sum(value(r, k, measured) for k in CATS))))
    return out


def state_rows(cells):
    """The state group: {(model, dp): {(dtype, optim, zero): (bytes per parameter, GiB,
    parameters)}} of the largest rank, over the padded flat count (the plan's numel)."""
    out = {}
    for c in cells:
        if c["group"] != "state":
            continue
        lay = c["layout"]
        worst = max(c["rows"], key=lambda r: state(r, False))
        b = state(worst, False)
        key = (lay["param_dtype"], lay["optim"], lay["zero"])
        out.setdefault((c["label"], lay["dp"]), {})[key] = (b / worst["numel"], b / 2**30,
                                                            c["parameters"])
    return out


def state_table(cells):
    rows = state_rows(cells)
    if not rows:
        return []
    keys = list(STATE_FORMULA)
    out = ["", "**Model state per parameter, fp32 and bf16 + ZeRO-1** (planned: `zerotrain "
           "memory --json`, which the allocation equals byte for byte; the largest rank's "
           "params + grads + optimizer over the padded parameter count; the formula in "
           "brackets):", "",
           "| model | dp | " + " | ".join("%s %s, zero %d (%s)" % (k[0], k[1], k[2],
                                                               STATE_FORMULA[k][0])
                                         for k in keys) +
           " | GiB per rank: fp32 zero 0 / bf16 zero 1 / bf16 8-bit zero 1 |"
           " bf16 / fp32 zero 0 | bf16 8-bit / fp32 zero 0 |",
           "|---|---|" + "---|" * (len(keys) + 3)]
    for (m, dp), d in rows.items():
        cols = ["%.3f (%.3f)" % (d[k][0], STATE_FORMULA[k][1](dp)) if k in d else "-"
                for k in keys]
        n = next(iter(d.values()))[2]
        if all(k in d for k in keys):
            f0 = d[keys[0]][0]
            tail = "%s | %.3f | %.3f" % (" / ".join("%.2f" % d[k][1] for k in (keys[0], keys[2],
                                                                              keys[3])),
                                         d[keys[2]][0] / f0, d[keys[3]][0] / f0)
        else:  # a partial sweep (MEM_GROUPS, a hand-made manifest)
            tail = "- | - | -"
        out.append("| %s (%.0fM) | %d | %s | %s |" % (m, n / 1e6, dp, " | ".join(cols), tail))
    return out


def plot(cells, path, measured):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2, ax4, ax3) = plt.subplots(1, 4, figsize=(22, 4.5))
    # left: predicted vs measured allocator total per rank
    xs, ys = [], []
    for c in cells:
        if c.get("plan_only"):
            continue
        for r in c["rows"]:
            xs.append(r["pred_tracked"] / MIB)
            ys.append((r["meas_total"] if measured and r["meas_total"] is not None
                       else r["pred_tracked"]) / MIB)
    ax1.scatter(xs, ys, s=14)
    hi = max(xs + ys + [1.0]) * 1.05  # a manifest of planned-only cells has no points here
    ax1.plot([0, hi], [0, hi], "k--", lw=0.8)
    ax1.set_xlabel("predicted (MiB)")
    ax1.set_ylabel("measured (MiB)" if measured else "predicted (dry run: no measurement)")
    ax1.set_title("allocator bytes per rank, every bench cell")
    # right: per-stage bytes by category for each partition method
    parts = [c for c in cells if c["group"] == "partition"]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x = 0
    ticks, labels = [], []
    for c in parts:
        for r in sorted(c["rows"], key=lambda r: r["pp"]):
            bottom = 0.0
            for i, k in enumerate(CATS):
                v = value(r, k, measured) / MIB
                ax2.bar(x, v, bottom=bottom, color=colors[i % len(colors)],
                        label=k if x == 0 else None)
                bottom += v
            ticks.append(x)
            labels.append("%s\ns%d" % (c["label"], r["pp"]))
            x += 1
        x += 0.6
    ax2.set_xticks(ticks)
    ax2.set_xticklabels(labels, fontsize=6, rotation=60)
    ax2.set_ylabel("MiB")
    ax2.set_title("per stage, by category (%s)" % ("measured" if measured else "predicted"))
    if parts:
        ax2.legend(fontsize=7)
    # third: the largest rank by category under --recompute, with and without sequence
    # parallelism
    x = 0
    ticks, labels = [], []
    for c in [c for c in cells if c["group"] == "recompute"]:
        top = max(c["rows"], key=lambda r: sum(value(r, k, measured) for k in CATS))
        bottom = 0.0
        for i, k in enumerate(CATS):
            v = value(top, k, measured) / MIB
            ax4.bar(x, v, bottom=bottom, color=colors[i % len(colors)],
                    label=k if not ticks else None)
            bottom += v
        ticks.append(x)
        labels.append(c["label"].replace(", ", "\n"))
        x += 1
    ax4.set_xticks(ticks)
    ax4.set_xticklabels(labels, fontsize=6)
    ax4.set_ylabel("MiB")
    ax4.set_title("largest rank, --recompute / --sequence-parallel (%s)" %
                  ("measured" if measured else "predicted"))
    if ticks:
        ax4.legend(fontsize=7)
    # right: model state per parameter against dp, GPT-2 124M: planned (markers), formula
    # (lines)
    rows = {dp: d for (m, dp), d in state_rows(cells).items() if m == "gpt2"}
    dps = sorted(rows)
    for k, (name, f) in STATE_FORMULA.items():
        pts = [(dp, rows[dp][k][0]) for dp in dps if k in rows[dp]]
        if not pts:
            continue
        line, = ax3.plot([p[0] for p in pts], [f(p[0]) for p in pts], lw=1,
                         label="%s %s, zero %d: %s" % (k[0], k[1], k[2], name))
        ax3.plot([p[0] for p in pts], [p[1] for p in pts], "o", ms=4, color=line.get_color())
    if dps:
        ax3.set_xscale("log", base=2)
        ax3.set_xticks(dps)
        ax3.set_xticklabels([str(dp) for dp in dps])
        ax3.set_ylim(0, 17)
        ax3.legend(fontsize=7)
    ax3.set_xlabel("dp")
    ax3.set_ylabel("bytes per parameter (params + grads + optimizer)")
    ax3.set_title("model state per rank, GPT-2 124M: planner (o) vs formula (-)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def report(manifest, png=None, dry=False):
    cells = []
    with open(manifest) as f:
        for line in f:
            if line.strip():
                cells.append(json.loads(line))
    for c in cells:
        ranks, plan = load_plan(c["plan"])
        recs = None if dry or c.get("plan_only") else load_records(c["log"], c["world"])
        c["rows"] = compare(ranks, recs)
        # the state group's fields (the self-test's hand-made plans have only the layout)
        c["layout"], c["parameters"] = plan["layout"], plan.get("model", {}).get("parameters")
        for r in c["rows"]:
            r["numel"] = ranks[r["rank"]].get("numel")
        c.setdefault("label", c["name"])
    trained = [c for c in cells if not c.get("plan_only")]
    out = []
    table, exact = rank_table(trained)
    out += ["Predicted (`zerotrain memory --json`) against measured (the trainer's per-rank "
            "peak of each allocator category, written to --log at the end of training), MiB. "
            "A cell shows the measurement, and where it differs from the prediction, by how "
            "many bytes.", ""]
    out += table
    if not dry:
        out += ["", "Every category of every rank equal to the byte: %s." % ("yes" if exact else "**no**")]
        # the process's RSS peak holds what no allocator sees: code, Open MPI, OpenBLAS
        rows = [r for c in trained for r in c["rows"] if r["rss"]]
        if rows:
            extra = [(r["rss"] - r["pred_tracked"]) / MIB for r in rows]
            worst = max(rows, key=lambda r: r["rss"] / r["pred_tracked"])
            out += ["", "Worst case: the allocator's per-category and total peaks are exact on "
                    "every rank; the process's resident peak (RSS) exceeds the predicted "
                    "allocator total by %.0f to %.0f MiB, the runtime's fixed cost outside its "
                    "allocator (code, Open MPI, OpenBLAS buffers), which is %.0f%% on the "
                    "smallest rank (%s rank %d: %.1f MiB predicted, %.1f MiB RSS)."
                    % (min(extra), max(extra),
                       100.0 * (worst["rss"] / worst["pred_tracked"] - 1.0),
                       next(c["label"] for c in trained if worst in c["rows"]), worst["rank"],
                       worst["pred_tracked"] / MIB, worst["rss"] / MIB)]
    out += savings_tables(trained, not dry)
    out += state_table(cells)
    if png:
        plot(cells, png, not dry)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- self-test

def selftest():
    """Parses a hand-made plan and log (2 ranks, pp 2) and checks the tables."""
    import tempfile
    d = tempfile.mkdtemp()

    def entry(rank, pp, b, window=0.0):
        tracked = float(sum(b))
        return {"rank": rank, "dp_rank": 0, "pp_rank": pp, "tp_rank": 0,
                "bytes": dict(zip(CATS, b)),
                "optimizer_split": {"master": 0, "m": b[2] / 2, "v": b[2] / 2, "absmax": 0, "table": 0},
                "comm_window": window, "end_transient": 0, "tracked": tracked,
                "peak": tracked + window}

    b0 = [4 * MIB, 4 * MIB, 8 * MIB, 30 * MIB, 2 * MIB, 1 * MIB, 0]
    b1 = [3 * MIB, 3 * MIB, 6 * MIB, 12 * MIB, 2 * MIB, 1 * MIB, 5 * MIB]
    plan = {"layout": {"world": 2, "dp": 1, "pp": 2, "tp": 1},
            "ranks": [entry(0, 0, b0, 2 * MIB), entry(1, 1, b1, 2 * MIB)]}
    with open(os.path.join(d, "p.json"), "w") as f:
        json.dump(plan, f)

    def record(rank, pp, b):
        return {"rank": rank, "dp_rank": 0, "pp_rank": pp, "tp_rank": 0,
                "mem_peak": dict(zip(CATS, b)), "mem_peak_total": sum(b), "rss_peak": sum(b) + 50 * MIB}

    m1 = list(b1)
    m1[5] += 336  # comm measured a little above the prediction
    with open(os.path.join(d, "l.jsonl"), "w") as f:
        f.write('{"step":1,"loss":5.5,"mem":{"params":1}}\n')
        f.write(json.dumps(record(1, 1, m1)) + "\n")   # ranks in any order
        f.write(json.dumps(record(0, 0, b0)) + "\n")
        f.write('{"step":1,"val_loss":5.4}\n')
    man = os.path.join(d, "m.jsonl")
    with open(man, "w") as f:
        f.write(json.dumps({"name": "part_uniform", "label": "uniform", "group": "partition",
                            "world": 2, "plan": os.path.join(d, "p.json"),
                            "log": os.path.join(d, "l.jsonl")}) + "\n")
    recs = load_records(os.path.join(d, "l.jsonl"), 2)
    assert sorted(recs) == [0, 1] and recs[1]["mem_peak"]["comm"] == 1 * MIB + 336
    text = report(man)
    assert "| part_uniform | 0 (0, 0, 0) | 4.0 | 4.0 | 8.0 | 30.0 | 2.0 | 1.0 | 0.0 | 49.0 | 51.0 / 99.0 | yes |" in text, text
    assert "| part_uniform | 1 (0, 1, 0) |" in text and "| no |" in text, text
    assert "1.0 (+336 B)" in text, text  # differs by 336 bytes: shown beside
    assert "equal to the byte: **no**" in text, text
    assert "| uniform | 49.0 | 32.0 | 49.0 | 1.53 |" in text, text
    # a log without the records, or a missing rank, is an error that says so
    with open(os.path.join(d, "bad.jsonl"), "w") as f:
        f.write('{"step":1,"loss":5.5}\n' + json.dumps(record(0, 0, b0)) + "\n")
    try:
        load_records(os.path.join(d, "bad.jsonl"), 2)
        raise AssertionError("a missing rank was accepted")
    except ValueError as e:
        assert "expected 0..1" in str(e), e
    # a planned-only cell (group state): in the state table, not in the rank table
    sp = {"model": {"parameters": 1000}, "layout": {"world": 2, "dp": 2, "pp": 1, "tp": 1,
                                                     "zero": 1, "param_dtype": "bf16",
                                                     "optim": "adamw"}, "ranks": []}
    for r in range(2):  # 1024 elements: 2 + 2 bytes each, and 12 over dp 2 on each rank
        e = entry(r, 0, [2048, 2048, 6144, 0, 0, 0, 0])
        e["dp_rank"], e["pp_rank"], e["numel"] = r, 0, 1024
        sp["ranks"].append(e)
    with open(os.path.join(d, "s.json"), "w") as f:
        json.dump(sp, f)
    with open(man, "a") as f:
        f.write(json.dumps({"name": "state_gpt2_dp2", "label": "gpt2", "group": "state",
                            "world": 2, "plan": os.path.join(d, "s.json"), "log": "-",
                            "plan_only": True}) + "\n")
    text = report(man)
    assert "state_gpt2" not in text, text  # not a trained cell
    assert "| gpt2 (0M) | 2 | - | - | 10.000 (10.000) | - | - | - | - |" in text, text
    dry = report(man, dry=True)
    assert "| part_uniform | 1 (0, 1, 0) | 3.0 | 3.0 | 6.0 | 12.0 | 2.0 | 1.0 | 5.0 | 32.0 | 34.0 / - | - |" in dry, dry
    print("memory_report.py: self-test passed")


def main():
    args = sys.argv[1:]
    if args == ["--selftest"]:
        selftest()
        return
    if not args:
        sys.exit(__doc__)
    png = None
    dry = "--dry" in args
    if "--png" in args:
        png = args[args.index("--png") + 1]
    sys.stdout.write(report(args[0], png, dry))


if __name__ == "__main__":
    main()
