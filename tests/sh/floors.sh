#!/usr/bin/env bash
# The source tree keeps its floors (docs/design.md, "Floors"): scripts/check_floors.py passes on
# the tree, and fails, naming the file, on copies of it with an include that goes up a floor,
# one into a backend's private folder, one between siblings of a floor, a file in a folder
# that is on no floor, and one that includes another module's internals (*_impl.h).
set -u
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
out=build/test_floors; rm -rf $out; mkdir -p $out
fail=0
"$PY" scripts/check_floors.py || { echo "FAIL: the tree breaks its floors"; fail=1; }

# mutant NAME FILE LINE: a copy of the sources with LINE added to FILE must be refused,
# with FILE named in the message
mutant() {
  local name=$1 file=$2 line=$3 d=$out/$1
  mkdir -p $d && cp -r docs src kernels comm optim $d/
  mkdir -p "$d/$(dirname "$file")" && echo "$line" >> "$d/$file"
  if "$PY" scripts/check_floors.py $d > $d/out.txt 2>&1; then
    echo "FAIL $name: not refused"; fail=1
  elif ! grep -q "^$file: " $d/out.txt; then
    echo "FAIL $name: the message does not name $file:"; cat $d/out.txt; fail=1
  else
    echo "ok   $name: $(head -1 $d/out.txt)"
  fi
}
mutant upward src/core/common.h '#include "train.h"'
mutant private src/model/gpt2.c '#include "kernels.h"'
mutant sibling src/formats/data.c '#include "planner.h"'
mutant no_floor src/extra/stray.c '#include "common.h"'
mutant impl src/app/train.c '#include "comm_mpi_impl.h"'
exit $fail
