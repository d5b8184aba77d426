#ifndef DIFFSTREAM_CTHREADS_H
#define DIFFSTREAM_CTHREADS_H
/* Naming the calling thread, which neither Glibc's Swift module (prctl) nor Foundation does reliably. */
#ifdef __linux__
#include <sys/prctl.h>
/* Names the calling thread as `top -H`, perf and /proc/PID/task/TID/comm show it (prctl PR_SET_NAME: the
   kernel keeps the first 15 bytes). Called first thing inside each thread of ours: a Foundation Thread's
   `name` set before `start()` never reaches the system thread on Linux, and set from inside it races
   the parent's `start()` (Foundation compares the two threads' handles before both are known). */
static inline void diffstream_name_this_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }
#else
#include <pthread.h>
/* The same on Apple's systems. */
static inline void diffstream_name_this_thread(const char *name) { (void)pthread_setname_np(name); }
#endif
#endif
