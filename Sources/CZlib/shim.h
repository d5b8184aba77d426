#ifndef DIFFSTREAM_CZLIB_SHIM_H
#define DIFFSTREAM_CZLIB_SHIM_H
#include <zlib.h>

/* deflateInit2 and inflateInit2 are function-like macros, which Swift does not import. */
static inline int diffstream_deflateInit2(z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}
static inline int diffstream_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
