#ifndef PARLEY_CRC32C_H
#define PARLEY_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/// Extends a CRC-32C (Castagnoli) over `length` bytes. Start with crc = 0.
/// Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise.
uint32_t parley_crc32c_extend(uint32_t crc, const void *bytes, size_t length);

/// Computes the CRC-32C with the portable table code only (for testing the fallback).
uint32_t parley_crc32c_extend_portable(uint32_t crc, const void *bytes, size_t length);

#endif
