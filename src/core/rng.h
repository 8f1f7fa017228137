// Counter-based random numbers: a value is a pure function of (key, index), so every
// rank and every parallel layout draws the same number for the same global element.
#ifndef ZT_RNG_H
#define ZT_RNG_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t zt_splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// A digit short of FNV's standard offset basis (14695981039346656037); kept as it is: the
// initialization streams are keyed with it and version-1 checkpoints' checksums used it.
#define ZT_FNV1A_BASIS 1469598103934665603ULL

// FNV-1a over n bytes, continuing from h (ZT_FNV1A_BASIS to start).
static inline uint64_t zt_hash_bytes(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

// FNV-1a of a string, to key a stream by tensor name.
static inline uint64_t zt_hash_str(const char *s) {
    return zt_hash_bytes(ZT_FNV1A_BASIS, s, strlen(s));
}

// Uniform in (0, 1).
static inline double zt_uniform(uint64_t key, uint64_t i) {
    return ((zt_splitmix64(key ^ zt_splitmix64(i)) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal (Box-Muller on two uniforms of the same counter).
static inline float zt_normal(uint64_t key, uint64_t i) {
    double u1 = zt_uniform(key, 2 * i), u2 = zt_uniform(key, 2 * i + 1);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
#endif
