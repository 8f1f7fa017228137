# Sourced by tests/sh scripts (from the repository root) that would otherwise depend on the
# user's environment (README, "The two commands": what the suite assumes).

# zerotrain's warnings about the environment rather than about the run: the BLAS kernels a
# user's OPENBLAS_CORETYPE forces (kernels/cpu/blas_core.c). Set on purpose on some machines, so a
# test that counts a run's warnings leaves them out (tests/sh/blas_core.sh tests them).
ZT_ENV_WARNING='^zerotrain: warning: (OPENBLAS_CORETYPE=.* \(yours\)|OpenBLAS )'

# The lines of FILE other than those warnings.
without_env_warnings() { grep -vE "$ZT_ENV_WARNING" "$1"; }

# zt_gpt2_vocab DIR: GPT-2's vocabulary where zerotrain looks by default, whatever HOME is
# (unset, read-only, another user's): copies it to DIR/zerotrain/gpt2.tiktoken, points
# XDG_CACHE_HOME at DIR for this test's processes and sets VOCAB to the file. The file comes
# from $ZT_GPT2_VOCAB, the user's cache or an earlier test's build/gpt2.tiktoken, else
# scripts/fetch_gpt2_vocab.sh fetches it into build/ (never into HOME). Returns 1 where it
# cannot be had (offline): the caller SKIPs.
zt_gpt2_vocab() {
  local dir=$1 src="" c
  for c in "${ZT_GPT2_VOCAB:-}" "${XDG_CACHE_HOME:+$XDG_CACHE_HOME/zerotrain/gpt2.tiktoken}" \
           "${HOME:+$HOME/.cache/zerotrain/gpt2.tiktoken}" build/gpt2.tiktoken; do
    if [ -n "$c" ] && [ -f "$c" ] && [ -r "$c" ]; then src=$c; break; fi
  done
  if [ -z "$src" ]; then
    bash scripts/fetch_gpt2_vocab.sh build/gpt2.tiktoken >&2 || return 1
    src=build/gpt2.tiktoken
  fi
  mkdir -p "$dir/zerotrain" && cp "$src" "$dir/zerotrain/gpt2.tiktoken" || return 1
  XDG_CACHE_HOME=$(cd "$dir" && pwd) || return 1
  export XDG_CACHE_HOME
  VOCAB=$XDG_CACHE_HOME/zerotrain/gpt2.tiktoken
}

# zt_layout_backend: sets ZT_TRAIN, the training command of a layout test (a single-rank run
# against the layouts): build/zerotrain, or with ZT_BACKEND=cuda (scripts/gpu_checks.sh)
# build/zerotrain-cuda --backend cuda, every rank on this machine's GPUs (ranks sharing one GPU
# move their tensors through MPI with host staging), so each layout is checked against the
# single-rank CUDA run with the same bounds. Exits 77 (SKIP) where that cannot run.
zt_layout_backend() {
  case ${ZT_BACKEND:-cpu} in
  cpu) ZT_TRAIN=build/zerotrain ;;
  cuda)
    [ -x build/zerotrain-cuda ] || { echo "SKIP: ZT_BACKEND=cuda: no build/zerotrain-cuda (make cuda)"; exit 77; }
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
      { echo "SKIP: ZT_BACKEND=cuda: no GPU here"; exit 77; }
    ZT_TRAIN="build/zerotrain-cuda --backend cuda" ;;
  *) echo "ZT_BACKEND must be cpu or cuda (got $ZT_BACKEND)"; exit 1 ;;
  esac
}
