#!/usr/bin/env bash
# Puts GPT-2's BPE vocabulary (gpt2.tiktoken) where zerotrain looks for it by default:
# ${XDG_CACHE_HOME:-$HOME/.cache}/zerotrain/gpt2.tiktoken (or the path given as $1).
# The file cannot be downloaded from OpenAI here; the openai-whisper source archive on PyPI ships
# it (whisper/assets/gpt2.tiktoken). pip downloads the archive (nothing is installed), the file is
# extracted and its SHA-256 checked against the hash tiktoken pins for r50k_base (= gpt2).
# Idempotent: does nothing when the file is already there with the right hash.
set -euo pipefail
SHA=306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930
DEST=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/zerotrain/gpt2.tiktoken}
PY=${PYTHON:-/usr/bin/python3}
if [ -f "$DEST" ] && echo "$SHA  $DEST" | sha256sum -c --status; then
  echo "fetch_gpt2_vocab: $DEST present"; exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zt_vocab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetch_gpt2_vocab: downloading openai-whisper 20250625 (source archive) from PyPI"
"$PY" -m pip download -q --no-deps --no-binary :all: openai-whisper==20250625 -d "$tmp" >&2
tar xzf "$tmp"/openai_whisper-20250625.tar.gz -C "$tmp" openai_whisper-20250625/whisper/assets/gpt2.tiktoken
f=$tmp/openai_whisper-20250625/whisper/assets/gpt2.tiktoken
if ! echo "$SHA  $f" | sha256sum -c --status; then
  echo "fetch_gpt2_vocab: gpt2.tiktoken from openai-whisper has SHA-256 $(sha256sum "$f" | cut -d' ' -f1), expected $SHA; not installed" >&2
  exit 1
fi
mkdir -p "$(dirname "$DEST")"
cp "$f" "$DEST.tmp.$$" && mv "$DEST.tmp.$$" "$DEST"
echo "fetch_gpt2_vocab: wrote $DEST (SHA-256 ok)"
