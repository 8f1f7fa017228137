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

Usage: check_floors.py [ROOT]   (default: the repository this script is in). Exit 1 with one
line per violation, 0 when the tree is clean.
"""
import os
import re
import sys

SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


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


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
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
    for e in errors:
        print(e)
    if errors:
        print(f"check_floors: {len(errors)} violation(s) of the floors in docs/design.md")
        return 1
    print(f"check_floors: {len(files)} files on {len(set(floor.values()))} floors, "
          f"every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
