#ifndef DIFFSTREAM_CSQLITE_SHIM_H
#define DIFFSTREAM_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro, which Swift does not import: it tells SQLite to copy a bound value. */
static inline sqlite3_destructor_type diffstream_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
#endif
