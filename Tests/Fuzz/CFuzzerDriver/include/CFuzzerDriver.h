#ifndef PARLEY_CFUZZERDRIVER_H
#define PARLEY_CFUZZERDRIVER_H

#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer's driver (argument parsing, corpus, mutation loop) over `test`, as libFuzzer's own `main`
/// would. SwiftPM gives every executable its own entry point, so the fuzz targets call this from `@main`.
int parley_run_fuzzer(int argc, char **argv, int (*test)(const uint8_t *data, size_t size));

#endif
