// Test macros: a test is `ZT_TEST(name) { ... return ZT_PASS; }`; checks print both
// sides with file and line and make the test fail (they survive release builds).
#ifndef ZT_TEST_H
#define ZT_TEST_H

#include <math.h>
#include <stdio.h>

#define ZT_PASS 0
#define ZT_FAIL 1
#define ZT_SKIP 77

#define ZT_TEST(name) int zt_test_##name(void)

typedef struct {
    const char *name;
    int (*fn)(void);
} zt_test_entry;

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return ZT_FAIL;                                                 \
        }                                                                   \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                          \
    do {                                                                            \
        long long a_ = (long long)(a), b_ = (long long)(b);                         \
        if (a_ != b_) {                                                             \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__, __LINE__, \
                    #a, #b, a_, b_);                                                \
            return ZT_FAIL;                                                         \
        }                                                                           \
    } while (0)

// |a - b| <= atol + rtol*|b|
#define CHECK_NEAR(a, b, atol, rtol)                                                    \
    do {                                                                                \
        double a_ = (double)(a), b_ = (double)(b);                                      \
        if (!(fabs(a_ - b_) <= (atol) + (rtol)*fabs(b_))) {                             \
            fprintf(stderr, "%s:%d: %s ~ %s failed: %.9g vs %.9g (diff %.3g)\n", __FILE__, \
                    __LINE__, #a, #b, a_, b_, fabs(a_ - b_));                           \
            return ZT_FAIL;                                                             \
        }                                                                               \
    } while (0)

// Compares n floats elementwise; prints the worst element and max difference; fails
// if any exceeds atol + rtol*|ref|.
int zt_check_close(const char *what, const float *got, const float *ref, size_t n, double atol,
                   double rtol);

// Notes a comparison's worst |diff| / bound for the running test (tests/main.c prints the
// largest after it: "worst error/bound R"); zt_check_close notes its own.
void zt_test_note_ratio(double ratio);

// The CPU backend, opened on first use (tests/main.c), for the tests that need no options.
typedef struct zt_backend zt_backend;
const zt_backend *zt_test_cpu(void);

#define CHECK_CLOSE(what, got, ref, n, atol, rtol) \
    do {                                           \
        if (zt_check_close(what, got, ref, n, atol, rtol)) return ZT_FAIL; \
    } while (0)

#endif
