#!/usr/bin/env bash
# The source tree keeps its floors (docs/design.md, "Floors"): scripts/check_floors.py passes on
# the tree, its includes and (from build/'s objects) its calls, and fails, naming the file, on
# copies of it with an include that goes up a floor, one into a backend's private folder, one
# between siblings of a floor, a file in a folder that is on no floor, one that includes
# another module's internals (*_impl.h), two files that call each other and a call up a floor
# that no lower header declares.
set -u
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
out=build/test_floors; rm -rf $out; mkdir -p $out
fail=0
ls build/src/app/*.o > /dev/null 2>&1 || { echo "FAIL: build/ holds no objects: make first"; exit 1; }
"$PY" scripts/check_floors.py --objects build || { echo "FAIL: the tree breaks its floors"; fail=1; }

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

# calls NAME FILE: sources of small files (name:body pairs in $@ after NAME FILE), compiled
# into a build folder of their own; the calls check must refuse them naming FILE
calls() {
  local name=$1 file=$2 d=$out/$1; shift 2
  mkdir -p $d/docs && cp docs/design.md $d/docs/
  for f in "$@"; do
    local path=${f%%:*} body=${f#*:}
    mkdir -p $d/$(dirname $path) $d/build/$(dirname $path)
    echo "$body" > $d/$path
    gcc -c $d/$path -o $d/build/${path%.c}.o || { echo "FAIL $name: does not compile"; fail=1; return; }
  done
  if "$PY" scripts/check_floors.py --objects $d/build $d > $d/out.txt 2>&1; then
    echo "FAIL $name: not refused"; fail=1
  elif ! grep -q "^$file: " $d/out.txt; then
    echo "FAIL $name: the message does not name $file:"; cat $d/out.txt; fail=1
  else
    echo "ok   $name: $(head -1 $d/out.txt)"
  fi
}
calls circle src/app/zz_a.c 'src/app/zz_a.c:void zz_b(void); void zz_a(void) { zz_b(); }' \
  'src/app/zz_b.c:void zz_a(void); void zz_b(void) { zz_a(); }'
calls call_up src/core/zz_low.c 'src/core/zz_low.c:void zz_high(void); void zz_low(void) { zz_high(); }' \
  'src/app/zz_high.c:void zz_high(void) {}'
exit $fail
