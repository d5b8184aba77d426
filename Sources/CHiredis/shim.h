#ifndef DIFFSTREAM_CHIREDIS_SHIM_H
#define DIFFSTREAM_CHIREDIS_SHIM_H
/* libhiredis from Debian (libhiredis-dev; 0.14.1 on Debian 12), its blocking API. The blocking API has no function-like macros
   (the REDIS_* constants are plain integers, which Swift imports), so no wrapper is needed yet; one
   goes here, `static inline`, when a macro is used. */
#include <hiredis/hiredis.h>
#endif
