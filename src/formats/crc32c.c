// CRC-32C (Castagnoli), byte-wise from a 256-entry table. Debian has no C library for it (no
// libcrc32c or google-crc32c package; checked on Debian 12), and TensorBoard's records need
// it a few times a step, so speed does not matter.
#include "crc32c.h"

#define ZT_CRC32C_POLY 0x82F63B78u  // 0x1EDC6F41 bit-reversed

static uint32_t table[256];
static int table_ready;

// table[b]: the CRC of byte b alone (without the initial value and final xor).
static void make_table(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (c & 1 ? ZT_CRC32C_POLY : 0);
        table[b] = c;
    }
    table_ready = 1;
}

uint32_t zt_crc32c(const void *data, size_t n) {
    if (!table_ready) make_table();  // rank 0 writes the records from one thread
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t zt_crc32c_mask(uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
