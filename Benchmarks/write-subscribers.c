// write-subscribers: the subscribers of Benchmarks/write-peers.sh with SUBSCRIBERS=N (issue 39, item 5:
// writes while subscribers follow the written feeds). One thread, one epoll set. Built by the script
// with `cc -O2`; not part of any package.
//
//   write-subscribers --port P --path /feeds/bench%d/events --feeds K --subscribers N [--sources 8]
//
// Subscriber i asks for the path with %d = 1 + i % K (feed or channel 1 + i % K), from 127.0.0.(1 + i %
// sources). Once every subscriber has its response head it prints READY; then it reads until SIGTERM and
// prints one `RESULT key=value ...` line. The writes carry a marker `@<t>@` (write-peers.lua with its
// `marker` argument: t is CLOCK_MONOTONIC in nanoseconds when wrk built the request); a marker's fan-out
// latency is the time a subscriber's socket delivered it minus t. Latencies go into a histogram (10 µs
// buckets to 100 ms, then 1 ms to 60 s). A server may coalesce batches for a subscriber that falls
// behind, so `events` can be fewer than writes × subscribers per feed.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAIL 32
#define BUCKETS (10000 + 59900)

typedef struct {
    int fd, head_done, status, closed, head_len, tail_len;
    char head[512];
    char tail[TAIL];
} Sub;

static Sub *subs;
static int nsubs = 1000, nfeeds = 16, port = 0, sources = 8, epfd;
static const char *path = "/feeds/bench%d/events";
static uint64_t hist[BUCKETS], events = 0;
static volatile sig_atomic_t stop = 0;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static double own_cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static void record(int64_t ns) {
    int64_t us = ns < 0 ? 0 : ns / 1000;
    int64_t b = us < 100000 ? us / 10 : 10000 + (us - 100000) / 1000;
    if (b >= BUCKETS) b = BUCKETS - 1;
    hist[b]++;
    events++;
}

static double bucket_ms(int b) { return b < 10000 ? (b * 10 + 5) / 1000.0 : 100.0 + (b - 10000) + 0.5; }

static double percentile(double p) {
    uint64_t want = (uint64_t)((double)events * p), seen = 0;
    for (int b = 0; b < BUCKETS; b++) {
        seen += hist[b];
        if (seen > want) return bucket_ms(b);
    }
    return -1;
}

// Finds every complete marker @<digits>@ in data[0..len); keeps an unfinished one for the next read.
static void scan(Sub *s, const char *data, size_t len, int64_t t) {
    size_t i = 0;
    s->tail_len = 0;
    while (i < len) {
        const char *at = memchr(data + i, '@', len - i);
        if (!at) return;
        size_t start = (size_t)(at - data), j = start + 1;
        long long ts = 0;
        int digits = 0;
        while (j < len && data[j] >= '0' && data[j] <= '9') { ts = ts * 10 + (data[j] - '0'); j++; digits++; }
        if (j >= len) {
            if (len - start < TAIL) { memcpy(s->tail, data + start, len - start); s->tail_len = (int)(len - start); }
            return;
        }
        if (data[j] == '@' && digits > 0) { record(t - ts); i = j + 1; } else i = start + 1;
    }
}

static char readbuf[TAIL + 256 * 1024];

static void read_sub(Sub *s) {
    memcpy(readbuf, s->tail, (size_t)s->tail_len);
    ssize_t n = recv(s->fd, readbuf + s->tail_len, sizeof readbuf - TAIL, 0);
    int64_t t = now_ns();
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->closed = 1;
        return;
    }
    const char *data = readbuf;
    size_t len = (size_t)n + (size_t)s->tail_len;
    if (!s->head_done) {
        size_t room = sizeof s->head - 1 - (size_t)s->head_len, take = len < room ? len : room;
        memcpy(s->head + s->head_len, data, take);
        s->head_len += (int)take;
        s->head[s->head_len] = 0;
        char *end = strstr(s->head, "\r\n\r\n");
        if (!end) return;
        s->head_done = 1;
        s->status = s->head_len > 12 ? atoi(s->head + 9) : 0;
        size_t body = (size_t)(s->head + s->head_len - (end + 4));
        data = readbuf + len - body;
        len = body;
        s->tail_len = 0;
    }
    scan(s, data, len, t);
}

static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--port")) port = atoi(v);
        else if (!strcmp(a, "--path")) path = v;
        else if (!strcmp(a, "--feeds")) nfeeds = atoi(v);
        else if (!strcmp(a, "--subscribers")) nsubs = atoi(v);
        else if (!strcmp(a, "--sources")) sources = atoi(v);
        else { fprintf(stderr, "unknown argument %s\n", a); return 2; }
    }
    if (!port || nfeeds < 1) { fprintf(stderr, "--port is required\n"); return 2; }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    epfd = epoll_create1(0);
    subs = calloc((size_t)nsubs, sizeof(Sub));
    static struct epoll_event evs[1024];
    for (int i = 0; i < nsubs; i++) {
        Sub *s = &subs[i];
        s->fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in local = {.sin_family = AF_INET}, addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        local.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)(1 + i % (sources > 0 ? sources : 1)));
        addr.sin_addr.s_addr = htonl(0x7f000001u);
        if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&local, sizeof local) || connect(s->fd, (struct sockaddr *)&addr, sizeof addr)) {
            perror("connect");
            return 1;
        }
        int one = 1;
        setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char target[256], req[512];
        snprintf(target, sizeof target, path, 1 + i % nfeeds);
        int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n", target);
        if (send(s->fd, req, (size_t)n, MSG_NOSIGNAL) != n) { perror("send"); return 1; }
        fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
        epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev);
        if (i % 256 == 255) {  // read what arrived meanwhile
            int k = epoll_wait(epfd, evs, 1024, 0);
            for (int e = 0; e < k; e++) read_sub(&subs[evs[e].data.u64]);
        }
    }
    int64_t deadline = now_ns() + 60000000000LL;
    for (int heads = 0; !stop && now_ns() < deadline;) {
        heads = 0;
        for (int i = 0; i < nsubs; i++) heads += subs[i].head_done;
        if (heads == nsubs) break;
        int k = epoll_wait(epfd, evs, 1024, 50);
        for (int e = 0; e < k; e++) read_sub(&subs[evs[e].data.u64]);
    }
    int bad = 0, heads = 0;
    for (int i = 0; i < nsubs; i++) { heads += subs[i].head_done; bad += subs[i].head_done && subs[i].status != 200; }
    memset(hist, 0, sizeof hist);
    events = 0;  // markers before READY (a snapshot's) are not counted
    printf("READY heads=%d\n", heads);
    fflush(stdout);
    double cpu0 = own_cpu();
    int64_t t0 = now_ns();
    while (!stop) {
        int k = epoll_wait(epfd, evs, 1024, 50);
        for (int e = 0; e < k; e++) read_sub(&subs[evs[e].data.u64]);
    }
    double seconds = (now_ns() - t0) / 1e9;
    int closed = 0;
    for (int i = 0; i < nsubs; i++) closed += subs[i].closed;
    printf("RESULT subscribers=%d bad_status=%d closed=%d events=%llu fanout_p50_ms=%.2f fanout_p99_ms=%.2f sub_tool_cpu_pct=%.0f\n",
           heads, bad, closed, (unsigned long long)events, percentile(0.50), percentile(0.99), (own_cpu() - cpu0) / seconds * 100);
    return 0;
}
