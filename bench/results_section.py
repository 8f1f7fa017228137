"""Replaces one "## " section of bench/RESULTS.md (up to the next "## " heading), or appends
it; every other section stays as it is. The bench scripts call it:

    /usr/bin/python3 bench/results_section.py bench/RESULTS.md "## Title" < section.md

The section text on stdin must start with the title line.
"""
import os
import re
import sys


def main():
    path, title = sys.argv[1], sys.argv[2]
    new = sys.stdin.read().rstrip("\n") + "\n"
    if not new.startswith(title + "\n"):
        sys.exit(f"results_section.py: the section must start with '{title}'")
    old = open(path).read() if os.path.exists(path) else "# zerotrain benchmark results\n"
    pat = re.compile(r"^" + re.escape(title) + r"\n.*?(?=^## |\Z)", re.S | re.M)
    if pat.search(old):
        out = pat.sub(lambda m: new + "\n", old, count=1)
    else:
        out = old.rstrip("\n") + "\n\n" + new
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(out.rstrip("\n") + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
