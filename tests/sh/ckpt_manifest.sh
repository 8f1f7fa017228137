#!/usr/bin/env bash
# The manifest is sealed (docs/checkpoints.md, format version 3): manifest.json's XXH3-64 in
# manifest.json.xxh3, and its data position cross-checked against where its run began.
# - "samples": 120 edited to 0: refused, one error naming the manifest and its checksum (was
#   a silent resume from another data position); the same edit resealed: refused by the
#   cross-check samples = run_start's + global_batch per step; so is a resealed step;
# - a version 3 manifest whose seal is gone is refused;
# - a resumed run with another global batch records where it began: its checkpoints pass;
# - a version 2 checkpoint (what the previous writer left: no seal, no run_start) still
#   resumes bit for bit, with one note that its manifest is unverified;
# - scripts/read_ckpt.py finds the same edits (the seal only with the xxhash module).
set -euo pipefail
out=build/test_ckpt_manifest; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
PY=${PYTHON:-/usr/bin/python3}
common="--n-layer 2 --n-head 2 --n-embd 32 --vocab 256 --n-ctx 32 --seq 16 --lr 1e-3 --warmup 2
        --val-every 0 --seed 7 --micro-batch 4 --grad-accum 2"
fail=0
die() { echo "FAIL: $*"; fail=1; }
run() { # name command...: must succeed
  local name=$1 rc=0; shift
  "$@" > $out/$name.out 2>&1 || rc=$?
  [ $rc -eq 0 ] || { cat $out/$name.out; echo "FAIL: $name exited $rc"; exit 1; }
}
refused() { # name pattern command...: must fail, the pattern on its one error line
  local name=$1 pat=$2; shift 2
  if "$@" > $out/$name.out 2> $out/$name.err; then die "$name: succeeded"; return; fi
  [ "$(grep -c 'zerotrain: error' $out/$name.err)" = 1 ] && grep -F -e "$pat" $out/$name.err \
      || { cat $out/$name.err; die "$name: not one error with '$pat'"; }
}

# steps of 8 sequences: step-15 stands at 120 samples
run full build/zerotrain $common --steps 17 --ckpt-dir $out/ck --ckpt-every 5 --log $out/full.jsonl
grep -q '"samples": 120,' $out/ck/step-15/manifest.json && [ -f $out/ck/step-15/manifest.json.xxh3 ] \
    || die "step-15 does not hold samples 120 and its seal"
edited() { # name: a copy of ck/step-15 with "samples": 120 -> 0
  rm -rf $out/$1; cp -r $out/ck/step-15 $out/$1
  sed -i 's/"samples": 120,/"samples": 0,/' $out/$1/manifest.json
}
edited e1
refused samples_edited "$out/e1/manifest.json does not match its checksum in $out/e1/manifest.json.xxh3" \
    build/zerotrain $common --steps 17 --resume $out/e1
edited e2; $PY tests/ckpt/reseal.py $out/e2
refused samples_resealed "$out/e2/manifest.json is corrupt: samples 0, but its run began at step 0 with 0 samples and reads 8 a step (global_batch), so step 15 stands at 120" \
    build/zerotrain $common --steps 17 --resume $out/e2
rm -rf $out/e3; cp -r $out/ck/step-15 $out/e3
sed -i 's/"step": 15,/"step": 10,/; s/"t": 15,/"t": 10,/' $out/e3/manifest.json; $PY tests/ckpt/reseal.py $out/e3
refused step_resealed "so step 10 stands at 80" build/zerotrain $common --steps 17 --resume $out/e3
rm -rf $out/e4; cp -r $out/ck/step-15 $out/e4; rm $out/e4/manifest.json.xxh3
refused seal_removed "$out/e4/manifest.json has format version 3 but no manifest.json.xxh3 beside it" \
    build/zerotrain $common --steps 17 --resume $out/e4
refused export_edited "does not match its checksum" build/zerotrain export $out/e1 --out $out/x

# a resume with another global batch (4 x 1): its checkpoints record where it began
run rebatch build/zerotrain $common --steps 17 --grad-accum 1 --resume $out/ck/step-15 --ckpt-dir $out/rb --ckpt-every 1
grep -q '"run_start": {"step": 15, "samples": 120}' $out/rb/step-17/manifest.json || die "step-17 lacks its run_start"
run rebatch_resume build/zerotrain $common --steps 18 --grad-accum 1 --resume $out/rb
grep -q "resumed from $out/rb/step-17 .*step 17, 128 samples" $out/rebatch_resume.out || { cat $out/rebatch_resume.out; die "step-17 not at 128 samples"; }

# the previous format: version 2, no seal, no run_start; resumes exactly, said once
rm -rf $out/v2; cp -r $out/ck/step-15 $out/v2; rm $out/v2/manifest.json.xxh3
sed -i '/"run_start"/d; s/"version": 3,/"version": 2,/' $out/v2/manifest.json
run v2 build/zerotrain $common --steps 17 --resume $out/v2 --log $out/v2.jsonl
[ "$(grep -c "checkpoint: $out/v2/manifest.json is format version 2, from before manifests were checksummed" $out/v2.out)" = 1 ] \
    || { cat $out/v2.out; die "no note that the version 2 manifest is unverified"; }
echo "== version 2 checkpoint, resumed from step 15"
$PY tests/ckpt/compare_losses.py $out/full.jsonl $out/v2.jsonl || fail=1

# scripts/read_ckpt.py: the cross-check always, the seal with the xxhash module
$PY scripts/read_ckpt.py $out/ck/step-15 > $out/py.out 2>&1 || { cat $out/py.out; die "read_ckpt.py on a sealed checkpoint"; }
$PY scripts/read_ckpt.py $out/v2 > $out/py2.out 2>&1 || { cat $out/py2.out; die "read_ckpt.py on version 2"; }
if $PY scripts/read_ckpt.py $out/e2 > $out/pye2.out 2>&1; then die "read_ckpt.py read the resealed edit"; fi
grep -q "samples 0, but its run began at step 0" $out/pye2.out || { cat $out/pye2.out; die "read_ckpt.py: no cross-check error"; }
if $PY -c "import xxhash" 2>/dev/null; then
  if $PY scripts/read_ckpt.py $out/e1 > $out/pye1.out 2>&1; then die "read_ckpt.py read the edited manifest"; fi
  grep -q "does not match its checksum" $out/pye1.out || { cat $out/pye1.out; die "read_ckpt.py: no seal error"; }
else
  echo "note: no Python xxhash here (pip install xxhash): read_ckpt.py's seal check not run"
fi
exit $fail
