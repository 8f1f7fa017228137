#!/usr/bin/env bash
# Regenerates the NumPy reference of the 8-bit dynamic quantization (never trusts a stale
# file) and compares our maps, codes and dequantized values against it
# (adamw8bit_reference in tests/test_adamw8bit.c).
set -euo pipefail
dir=build/quant8
rm -rf "$dir" && mkdir -p "$dir"
"${PYTHON:-/usr/bin/python3}" tests/reference/quant8_ref.py --out "$dir/quant8_ref.bin"
ZT_QUANT8_REF=$dir/quant8_ref.bin build/zt_tests adamw8bit_reference
