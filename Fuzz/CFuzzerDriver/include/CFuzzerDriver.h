#ifndef MOYA_C_FUZZER_DRIVER_H
#define MOYA_C_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (compiler-rt's `libclang_rt.fuzzer`, linked by `-sanitize=fuzzer`): parses libFuzzer's flags from
/// `argv` and runs the fuzzing loop, or the given inputs once, with `callback` as the target. Only linked in the fuzz
/// build (`scripts/fuzz.sh`); `MoyaFuzz` calls it only when compiled with `-D MOYA_FUZZING`.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
