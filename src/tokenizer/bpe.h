// GPT-2 byte-level BPE: the vocabulary file, encoding text to token ids and decoding them back,
// identical to tiktoken's `gpt2` encoding (encode_ordinary) on valid UTF-8.
//
// Encoding, as tiktoken does it:
//   1. pre-tokenization: the text is cut into pieces by GPT-2's pattern (pretokenize.h; the classes
//      of tiktoken's regex engine, Unicode 16.0.0: unicode_class.h)
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   2. a piece whose bytes are a token maps to it directly; otherwise its bytes start as
//      single-byte tokens and the adjacent pair whose concatenation has the lowest rank (the
//      leftmost of equals) is merged, until no adjacent pair is a token.
// A token's rank is its id. The text is ordinary text: "<|endoftext|>" in it is encoded as
// characters, never as the special token (tiktoken's encode_ordinary).
//
// Invalid UTF-8 (tiktoken's encode takes a Python str, so it never sees invalid bytes; see
// docs/tokenizer.md for what each choice matches):
//   ZT_BPE_INVALID_KEEP (default): lossless. The regex runs on each maximal valid stretch as
//     if it were the whole text, and each maximal run of invalid bytes is one piece of its
//     own, byte-pair merged like any piece (all 256 bytes are tokens), so
//     decode(encode(x)) == x for every byte string x. Equal to concatenating tiktoken's
//     encode_ordinary of each valid stretch and _encode_single_piece of each invalid run.
//   ZT_BPE_INVALID_REPLACE: every invalid byte becomes U+FFFD first: the ids of tiktoken's
//     encode_ordinary(bytes.decode("utf-8", "surrogateescape")) (tiktoken turns each lone
//     surrogate into U+FFFD). Lossy.
// "Invalid" is what Python's strict UTF-8 decoder rejects: overlongs, surrogates (ED A0..BF),
// code points above U+10FFFF, stray continuation bytes, truncated sequences.
#ifndef ZT_BPE_H
#define ZT_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

// GPT-2's end-of-text token: the special token after the 50256 byte-pair ranks.
#define ZT_BPE_GPT2_EOT 50256
// A model's vocabulary tells its tokenizer: GPT-2's BPE (50257 ids), bytes (256 ids).
#define ZT_GPT2_VOCAB 50257
#define ZT_BYTES_VOCAB 256

enum { ZT_BPE_INVALID_KEEP = 0, ZT_BPE_INVALID_REPLACE = 1 };

typedef struct zt_bpe zt_bpe;  // opaque; read-only after zt_bpe_load, so threads may share it

// A growable list of token ids; encode appends to it. Start zeroed ({0}); free with
// zt_bpe_ids_free.
typedef struct {
    int32_t *ids;  // (n), capacity cap
    size_t n, cap;
} zt_bpe_ids;
void zt_bpe_ids_free(zt_bpe_ids *ids);

// Loads a vocabulary in tiktoken's format (gpt2.tiktoken, r50k_base.tiktoken): one token a
// line, "<base64 of the token's bytes> <rank>\n", ranks 0 .. n-1 each once, every single byte
// among the tokens. The end-of-text token is id n (50256 for GPT-2) and decodes to
// "<|endoftext|>". On success *out is a new tokenizer the caller frees with zt_bpe_free. Fails
// (status, *out NULL, message naming the file, the line and the fix) on a missing, unreadable
// or malformed file. Not thread-safe (sets the error message); call once.
zt_status zt_bpe_load(zt_bpe **out, const char *path);
void zt_bpe_free(zt_bpe *bpe);  // NULL is fine

// Where setup puts the GPT-2 vocabulary and where `--vocab` defaults to:
// ${XDG_CACHE_HOME:-$HOME/.cache}/zerotrain/gpt2.tiktoken (scripts/fetch_gpt2_vocab.sh), written
// into buf (cap bytes, truncated if longer).
void zt_bpe_default_vocab(char *buf, size_t cap);

// Number of ids: byte-pair tokens plus the end-of-text token (50257 for GPT-2).
int zt_bpe_vocab_size(const zt_bpe *bpe);
int zt_bpe_eot(const zt_bpe *bpe);

// Appends the ids of text (n bytes, any bytes; NUL is an ordinary character) to *out.
// invalid: ZT_BPE_INVALID_KEEP or ZT_BPE_INVALID_REPLACE (above). Thread-safe: any number of
// threads may encode with one bpe at once, each into its own *out. Cannot fail on any input;
// running out of memory is fatal.
void zt_bpe_encode(const zt_bpe *bpe, const void *text, size_t n, int invalid, zt_bpe_ids *out);

// The most memory zt_bpe_encode takes for n bytes of text, its new ids included (the text
// itself not): with ZT_BPE_INVALID_KEEP, 4 n for the ids, reserved up front at one per byte (a
// piece over 128 bytes merges in them: its parts are one uint32 per byte, which become its
// ids) and 8 (m / 8 + 64) ~ m bytes of candidate pairs for the longest piece (m <= n): about 5
// bytes per byte. With ZT_BPE_INVALID_REPLACE and invalid bytes, the text with U+FFFD for each
// (up to 3 n) and the same for it: up to 18 n. Reserved ids beyond those used are given back
// at the end when they are over 16 MB.
size_t zt_bpe_encode_bytes(size_t n, int invalid);

// The bytes of one id (*len of them; not NUL-terminated, owned by bpe), or NULL when id is
// out of range. The end-of-text id gives "<|endoftext|>". For streaming output: a token may
// hold part of a UTF-8 character, so print bytes, not characters.
const unsigned char *zt_bpe_token_bytes(const zt_bpe *bpe, int32_t id, size_t *len);

// The merge that made token id, for a Hugging Face merges list (merges.txt): its bytes
// byte-pair merged with only the ranks below id allowed, which ends in exactly two parts, the
// pair whose merge is rank id, for a vocabulary built by merges (every multi-byte GPT-2
// token). Sets *left and *right and returns 1; returns 0 for a single byte, an id out of
// range, or a token that does not end in two parts.
int zt_bpe_merge_of(const zt_bpe *bpe, int32_t id, int32_t *left, int32_t *right);

// Decodes ids (n) into *text (*len bytes, NUL-terminated for convenience; the caller frees).
// Fails (status, *text NULL) on an id outside [0, vocab size), naming it and its position.
zt_status zt_bpe_decode(const zt_bpe *bpe, const int32_t *ids, size_t n, char **text,
                        size_t *len);

// The largest 0 < k < n such that encoding text[0..k) and text[k..n) separately gives the same
// ids as encoding text[0..n) whole (0 when none was found): a cut before a '\n' that follows a
// character that is not white space, or, failing that, between two printable ASCII characters
// of different kinds (letter, digit, other) where the left one is not '\''. Lets a stream be
// encoded in chunks. Looks back at most `window` bytes from n.
size_t zt_bpe_safe_cut(const void *text, size_t n, size_t window);

#endif
