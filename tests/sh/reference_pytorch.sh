#!/usr/bin/env bash
# Regenerates the PyTorch reference (never trusts a stale file) and compares the C model
# against it (tests/test_reference.c): logits, loss, gradients, AdamW steps. Then runs
# the real binary from the same checkpoint and data and compares its logged step losses.
set -euo pipefail
dir=build/ref
rm -rf "$dir" && mkdir -p "$dir"
"${PYTHON:-/usr/bin/python3}" tests/reference/gpt2_ref.py --out "$dir" > "$dir/ref.log"
ZT_REF_DIR=$dir build/zt_tests reference_pytorch
