#ifndef DIFFSTREAM_CSYSTEMSHIMS_H
#define DIFFSTREAM_CSYSTEMSHIMS_H
/* Linux interfaces that the Glibc module does not export to Swift: epoll and eventfd. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <malloc.h>

static inline uint32_t diffstream_EPOLLIN(void) { return EPOLLIN; }
static inline uint32_t diffstream_EPOLLOUT(void) { return EPOLLOUT; }
static inline uint32_t diffstream_EPOLLERR(void) { return EPOLLERR; }
static inline uint32_t diffstream_EPOLLHUP(void) { return EPOLLHUP; }
static inline uint32_t diffstream_EPOLLRDHUP(void) { return EPOLLRDHUP; }
/* glibc's malloc_trim(0): gives the heap's free pages back to the system. */
static inline void diffstream_malloc_trim(void) { (void)malloc_trim(0); }
#endif
