#ifndef MOYA_GATEWAY_CZLIB_SHIM_H
#define MOYA_GATEWAY_CZLIB_SHIM_H
#include <zlib.h>

/* deflateInit2 and inflateInit2 are macros over the *_ variants. */
static inline int cgw_deflateInit2(z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}

static inline int cgw_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
