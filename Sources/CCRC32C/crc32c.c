#include "crc32c.h"
#include <string.h>

static uint32_t table[8][256];
static int table_ready = 0;

static void build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = table[0][i];
        for (int t = 1; t < 8; t++) {
            c = table[0][c & 0xFF] ^ (c >> 8);
            table[t][i] = c;
        }
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t parley_crc32c_extend_portable(uint32_t crc, const void *bytes, size_t length) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) build_tables();
    const uint8_t *p = bytes;
    uint32_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        word ^= c;
        c = table[7][word & 0xFF] ^ table[6][(word >> 8) & 0xFF] ^ table[5][(word >> 16) & 0xFF] ^
            table[4][(word >> 24) & 0xFF] ^ table[3][(word >> 32) & 0xFF] ^ table[2][(word >> 40) & 0xFF] ^
            table[1][(word >> 48) & 0xFF] ^ table[0][word >> 56];
        p += 8;
        length -= 8;
    }
    while (length--) c = table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    const uint8_t *p = bytes;
    uint64_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
#endif

uint32_t parley_crc32c_extend(uint32_t crc, const void *bytes, size_t length) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return crc32c_hardware(crc, bytes, length);
#endif
    return parley_crc32c_extend_portable(crc, bytes, length);
}
