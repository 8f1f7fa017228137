#!/usr/bin/env bash
# --schedule interleaved on the CUDA backend, ranks sharing this machine's GPU (the ring's
# sends through host staging): tests/sh/interleaved_equivalence.sh's first layout (bit for bit
# against 1F1B over pp x V stages) and its single-rank comparison, with ZT_BACKEND=cuda. SKIP
# without build/zerotrain-cuda or a GPU.
set -u
ZT_BACKEND=cuda ZT_INTERLEAVED_QUICK=1 exec bash tests/sh/interleaved_equivalence.sh
