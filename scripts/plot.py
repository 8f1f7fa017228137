#!/usr/bin/env python3
"""Draws the training and validation loss, and the throughput, of one or several zerotrain
--log files (JSON lines) into one PNG: the losses on the top panel (training as a line,
validation as dots joined by a dashed line, one colour per log), tokens per second below.

    plot.py LOG.jsonl [LOG.jsonl ...] [-o loss.png] [--labels a,b] [--title TEXT]

Each log is labelled by its file name unless --labels gives the names; the title names the
first log's model and batch (and the layout the logs share) when its first record holds the
run's configuration (logs of
older zerotrain versions, without it, plot all the same). Needs matplotlib (Debian:
python3-matplotlib); run it with /usr/bin/python3 where another python lacks it."""
import argparse
import json
import os
import sys


def read_log(path):
    """The series of one log: {"step", "loss", "tokens_per_s"} of the step records,
    {"val_step", "val_loss"} of the validation records, and "config" (the first record's
    "config" and "layout", or {} when it has none)."""
    s = {"step": [], "loss": [], "tokens_per_s": [], "val_step": [], "val_loss": [],
         "config": {}}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit("plot.py: %s line %d is not JSON (%s): is it a zerotrain "
                                 "--log file?" % (path, n, e.msg))
            if n == 1 and "config" in r:
                s["config"] = dict(r["config"], layout=r.get("layout", {}))
            if "loss" in r and "step" in r:
                s["step"].append(r["step"])
                s["loss"].append(r["loss"])
                s["tokens_per_s"].append(r.get("tokens_per_s"))
            elif "val_loss" in r:
                s["val_step"].append(r["step"])
                s["val_loss"].append(r["val_loss"])
    if not s["step"]:
        raise SystemExit("plot.py: %s holds no step records (\"step\" and \"loss\"): give the "
                         "file a run wrote with --log" % path)
    return s


def title_of(configs):
    """The model and batch of the runs, from their configuration records, and their layout
    where they share one ("" when the first log has no configuration record)."""
    cfg = configs[0]
    if not cfg:
        return ""
    t = "%s: %d layers, %d heads, %d channels; batch %d x %d x %d tokens" % (
        cfg.get("model"), cfg.get("n-layer"), cfg.get("n-head"), cfg.get("n-embd"),
        cfg.get("micro-batch"), cfg.get("grad-accum"), cfg.get("seq"))
    lay = cfg.get("layout", {})
    if lay and all(c.get("layout") == lay for c in configs):
        t += "; dp %s x pp %s x tp %s" % (lay.get("dp"), lay.get("pp"), lay.get("tp"))
    return t


def plot(series, labels, out, title):
    import matplotlib
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 5.5),
                                      gridspec_kw={"height_ratios": [3, 1]})
    for i, (s, label) in enumerate(zip(series, labels)):
        colour = "C%d" % (i % 10)
        top.plot(s["step"], s["loss"], color=colour, lw=1, label="%s train" % label)
        if s["val_step"]:
            top.plot(s["val_step"], s["val_loss"], "o--", color=colour, ms=4, lw=1,
                     label="%s validation" % label)
        tps = [(x, y) for x, y in zip(s["step"], s["tokens_per_s"]) if y is not None]
        if tps:
            bottom.plot([x for x, _ in tps], [y for _, y in tps], color=colour, lw=1)
    top.set_ylabel("loss (nats per token)")
    top.grid(alpha=0.3)
    top.legend(fontsize=8)
    bottom.set_ylabel("tokens / s")
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    if title:
        top.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+", help="zerotrain --log files (JSON lines)")
    ap.add_argument("-o", "--out", default="loss.png", help="the PNG to write (loss.png)")
    ap.add_argument("--labels", help="comma-separated names of the logs (default: file names)")
    ap.add_argument("--title", help="the plot's title (default: the model, batch and shared layout)")
    a = ap.parse_args()
    labels = a.labels.split(",") if a.labels else [
        os.path.splitext(os.path.basename(p))[0] for p in a.logs]
    if len(labels) != len(a.logs):
        sys.exit("plot.py: --labels names %d logs but %d were given: give one name per log"
                 % (len(labels), len(a.logs)))
    for p in a.logs:
        if not os.path.isfile(p):
            sys.exit("plot.py: %s is not a file: give the path a run's --log wrote" % p)
    series = [read_log(p) for p in a.logs]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("plot.py: matplotlib is missing for %s: install python3-matplotlib (Debian) "
                 "and run it with /usr/bin/python3" % sys.executable)
    title = a.title if a.title is not None else title_of([s["config"] for s in series])
    plot(series, labels, a.out, title)
    print("plot.py: wrote %s (%s)" % (a.out, ", ".join(
        "%s: %d steps, %d validations" % (l, len(s["step"]), len(s["val_step"]))
        for l, s in zip(labels, series))))


if __name__ == "__main__":
    main()
