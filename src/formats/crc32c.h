// CRC-32C (Castagnoli), the checksum of TensorBoard's TFRecord framing (tb_events.c).
#ifndef ZT_CRC32C_H
#define ZT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

// CRC-32C of data (n bytes): reflected polynomial 0x82F63B78, initial value and final xor
// 0xFFFFFFFF (RFC 3720's iSCSI checksum: crc32c("123456789") = 0xE3069283).
uint32_t zt_crc32c(const void *data, size_t n);

// TFRecord's masked form of a CRC (so a CRC over data that holds CRCs stays well spread):
// ((crc >> 15) | (crc << 17)) + 0xa282ead8, as TensorFlow's crc32c::Mask.
uint32_t zt_crc32c_mask(uint32_t crc);

#endif
