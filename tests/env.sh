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
