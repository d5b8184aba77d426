#ifndef DIFFSTREAM_CBENCHSHIMS_H
#define DIFFSTREAM_CBENCHSHIMS_H
/* epoll for the load tool (the Glibc module does not export it to Swift). */
#include <sys/epoll.h>
#include <stdint.h>

static inline uint32_t bench_EPOLLIN(void) { return EPOLLIN; }
#endif
