#!/usr/bin/env python3
"""Checks that the source tree keeps its floors (docs/design.md, "Floors").

The floors are read from the ```floors block of docs/design.md: one line per floor, lowest
first, "N folder... [private: folder...]". A file may include only files of its own folder or
of a lower floor; folders on one floor are siblings and never include each other; a private
folder's files are included only from that folder (the backends, reached through their
interface). A header named *_impl.h is a module's internals: included only from its own folder
and the folders under it. Every C/CUDA source under the listed roots must sit in a listed
folder, and base names are unique (includes name files by base name, with every folder on the
include path).

With --objects BUILD (the folder `make` compiles into: BUILD/<path>.o for each <path>.c), the
calls are checked too, from the objects' symbols (nm): a function defined on a higher floor or
a sibling folder is called only through a declaration on the caller's floor or below (an
interface that a higher floor implements, as the backend registry's entries), and no two files
call each other, directly or around a longer circle (a circle is one concept in two files, or
two concepts that should meet in a third).

Usage: check_floors.py [--objects BUILD] [ROOT]   (default ROOT: the repository this script is
in). Exit 1 with one line per violation, 0 when the tree is clean.
"""
import collections
import os
import re
import subprocess
import sys

SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def read_floors(root):
    text = open(os.path.join(root, "docs", "design.md"), encoding="utf-8").read()
    block = re.search(r"^```floors\n(.*?)^```", text, re.M | re.S)
    if not block:
        sys.exit("check_floors: docs/design.md has no ```floors block")
    floor, private = {}, set()
    for line in block.group(1).splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        level, _, rest = line.partition(" ")
        public, _, priv = rest.partition("private:")
        for d in public.split():
            floor[d] = int(level)
        for d in priv.split():
            floor[d] = int(level)
            private.add(d)
    return floor, private


def sources(root, floor):
    """(path relative to root, folder) for every C/CUDA file under the floors' top folders."""
    tops = {d.split("/")[0] for d in floor}
    for top in sorted(tops):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith(SOURCE_EXT):
                    rel = os.path.relpath(os.path.join(dirpath, n), root)
                    yield rel, os.path.dirname(rel)


def object_symbols(root, build, floor):
    """({symbol: defining source}, {source: symbols it calls}) from BUILD's objects of the
    sources on the floors (nm: T/D/B/R defined, U undefined)."""
    defined, calls = {}, collections.defaultdict(set)
    for folder in sorted(floor):
        d = os.path.join(build, folder)
        if not os.path.isdir(d):
            continue
        for n in sorted(os.listdir(d)):
            if not n.endswith(".o"):
                continue
            stem = os.path.join(folder, n[:-2])
            src = next((stem + e for e in (".c", ".cu")
                        if os.path.exists(os.path.join(root, stem + e))), None)
            if src is None:
                continue
            out = subprocess.run(["nm", os.path.join(d, n)], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                f = line.split()
                if len(f) == 3 and f[1] in "TDBR":
                    defined[f[2]] = src
                elif len(f) == 2 and f[0] == "U":
                    calls[src].add(f[1])
    return defined, calls


def declared_at_or_below(root, floor, level, symbol, cache):
    """Whether a header on floor `level` or below declares `symbol` (a function or an extern);
    `cache` keeps each level's headers, comments stripped, for one tree."""
    if level not in cache:
        cache[level] = COMMENT.sub(" ", "".join(
            open(os.path.join(root, folder, n), encoding="utf-8", errors="replace").read()
            for folder, lv in floor.items() if lv <= level and os.path.isdir(os.path.join(root, folder))
            for n in sorted(os.listdir(os.path.join(root, folder))) if n.endswith((".h", ".cuh"))))
    return re.search(r"\b%s\s*[(;\[]" % re.escape(symbol), cache[level]) is not None


def circles(graph):
    """The strongly connected components of more than one file (Tarjan), each sorted."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check_calls(root, build, floor):
    defined, calls = object_symbols(root, build, floor)
    errors, graph, headers = [], collections.defaultdict(set), {}
    for src in sorted(calls):
        folder = os.path.dirname(src)
        for sym in sorted(calls[src]):
            target = defined.get(sym)
            if target is None or target == src:
                continue
            graph[src].add(target)
            tfolder = os.path.dirname(target)
            if tfolder == folder or floor[tfolder] < floor[folder]:
                continue
            if not declared_at_or_below(root, floor, floor[folder], sym, headers):
                errors.append(f"{src}: calls {sym} of {target}, on a higher or sibling floor "
                              f"({tfolder}: {floor[tfolder]}, {folder}: {floor[folder]})")
    sys.setrecursionlimit(max(1000, 4 * len(graph)))
    for comp in circles(graph):
        errors.append(f"{comp[0]}: calls and is called by {', '.join(comp[1:])} (a circle: "
                      f"split the shared part into a file both call)")
    return errors


def main():
    args = sys.argv[1:]
    build = None
    if args[:1] == ["--objects"]:
        build, args = args[1], args[2:]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    floor, private = read_floors(root)
    errors, where = [], {}
    files = list(sources(root, floor))
    for rel, folder in files:
        if folder not in floor:
            errors.append(f"{rel}: folder {folder} is on no floor (add it to docs/design.md's "
                          f"floors block, or move the file)")
            continue
        base = os.path.basename(rel)
        if base in where:
            errors.append(f"{rel}: base name also used by {where[base]} (includes name files "
                          f"by base name: rename one)")
        where.setdefault(base, rel)
    for rel, folder in files:
        if folder not in floor:
            continue
        text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE.findall(text):
            target = where.get(os.path.basename(inc))
            if target is None:
                continue  # a generated or build-time header (the test table, cuda's)
            tfolder = os.path.dirname(target)
            if target.endswith("_impl.h") and not (folder + "/").startswith(tfolder + "/"):
                errors.append(f"{rel}: includes {target}, the internals of {tfolder} (go "
                              f"through that module's public header)")
                continue
            if tfolder == folder:
                continue
            if tfolder in private:
                errors.append(f"{rel}: includes {target}, private to {tfolder} (go through "
                              f"that floor's interface)")
            elif floor[tfolder] > floor[folder]:
                errors.append(f"{rel}: includes {target}, which is on a higher floor "
                              f"({tfolder}: {floor[tfolder]} > {folder}: {floor[folder]})")
            elif floor[tfolder] == floor[folder]:
                errors.append(f"{rel}: includes {target}, a sibling on the same floor "
                              f"({tfolder} and {folder}: {floor[folder]})")
    if build:
        errors += check_calls(root, build, floor)
    for e in errors:
        print(e)
    if errors:
        print(f"check_floors: {len(errors)} violation(s) of the floors in docs/design.md")
        return 1
    print(f"check_floors: {len(files)} files on {len(set(floor.values()))} floors, "
          f"every include points down" + (", every call too, no circles" if build else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
