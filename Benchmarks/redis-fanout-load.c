// redis-fanout-load: the load tool of Benchmarks/run-redis-fanout.sh (cross-instance fan-out through
// Redis). One thread, one epoll set. Built by the script with `cc -O2`; not part of any package.
//
//   redis-fanout-load --mode diffstream|nchan --sub-ports 8001,8002,8003 --pub-port 8001
//                     [--subscribers 3000] [--publishes 40] [--interval-ms 200] [--sources 8]
//                     [--pid PID]... [--redis-pid PID]
//
// Subscriber i connects to sub-ports[i % ports] from 127.0.0.(1 + i % sources). Every publish goes to
// --pub-port on a fresh connection and carries a marker `@<seq>:<t>@`, where t is CLOCK_MONOTONIC in
// nanoseconds read just before the connection is opened. A subscriber's latency for a publish is the
// time its socket delivered the marker minus the t inside the payload.
//   diffstream: PUT /feeds/fanout with a snapshot of `items` items plus a marker item whose model holds
//               the marker (so each publish is one `update` operation in the batch).
//   nchan:      POST /pub/fanout with {"m":"@<seq>:<t>@"}.
// Before the timed publishes: diffstream gets a first PUT (seq 0) before any subscriber connects, and
// each subscriber waits for its snapshot; then one untimed warm-up publish (seq 1), for both servers,
// which every subscriber must receive before the timed publishes (seq 2..) start.
// The last line, `RESULT key=value ...`, is for the script.
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

#define MAX_PORTS 16
#define MAX_PIDS 64
#define TAIL 64
#define PUB_TOKEN UINT64_MAX

static const char *mode = "diffstream";
static int nchan = 0;
static int sub_ports[MAX_PORTS], nports = 0, pub_port = 0;
static int subscribers = 3000, publishes = 40, interval_ms = 200, sources = 8, items = 20, warmups = 1;
static int pids[MAX_PIDS], npids = 0, redis_pid = 0;

typedef struct {
    int fd, port, head_done, status, closed;
    int head_len;
    char head[1024];
    int tail_len;
    char tail[TAIL];
    int64_t *latency_ns;  // per seq; -1 = not received
    int duplicates;
} Sub;

static Sub *subs;
static int epfd;
static int total_seqs;  // 0 .. total_seqs-1

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static double cpu_seconds(int pid) {
    char path[64], text[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')');
    if (!p) return 0;
    p += 2;  // state
    unsigned long utime = 0, stime = 0;
    int field = 3;
    char *save;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
        if (field == 14) utime = strtoul(tok, NULL, 10);
        if (field == 15) { stime = strtoul(tok, NULL, 10); break; }
    }
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static double servers_cpu(void) {
    double s = 0;
    for (int i = 0; i < npids; i++) s += cpu_seconds(pids[i]);
    return s;
}

static long rss_kib(int pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long kib = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) { kib = strtol(line + 6, NULL, 10); break; }
    fclose(f);
    return kib;
}

static long servers_rss(void) {
    long s = 0;
    for (int i = 0; i < npids; i++) s += rss_kib(pids[i]);
    return s;
}

static double own_cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static int connect_to(int port, int source) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { perror("socket"); exit(1); }
    struct sockaddr_in local = {.sin_family = AF_INET};
    local.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)source);
    if (bind(fd, (struct sockaddr *)&local, sizeof local) != 0) { perror("bind"); exit(1); }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(0x7f000001u);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) { perror("connect"); exit(1); }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("send");
            exit(1);
        }
        data += n;
        len -= (size_t)n;
    }
}

static void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// The publish request for seq, timestamp t (ns), into buf; returns its length.
static size_t publish_request(char *buf, size_t cap, int seq, int64_t t) {
    char body[8192];
    int len;
    if (nchan) {
        len = snprintf(body, sizeof body, "{\"m\":\"@%d:%lld@\"}", seq, (long long)t);
    } else {
        len = snprintf(body, sizeof body, "{\"sections\":[{\"id\":\"s\",\"model\":null,\"items\":[{\"id\":\"marker\",\"kind\":\"card\",\"model\":{\"m\":\"@%d:%lld@\"}}", seq, (long long)t);
        for (int i = 0; i < items; i++)
            len += snprintf(body + len, sizeof body - (size_t)len, ",{\"id\":\"item-%d\",\"kind\":\"card\",\"model\":{\"n\":%d}}", i, i);
        len += snprintf(body + len, sizeof body - (size_t)len, "]}]}");
    }
    return (size_t)snprintf(buf, cap,
                            "%s %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                            nchan ? "POST" : "PUT", nchan ? "/pub/fanout" : "/feeds/fanout", len, body);
}

// The publish in flight (its answer is read by the same epoll loop as the subscribers).
static int pub_fd = -1, pub_answer_len = 0, pub_failures = 0, pub_count = 0;
static char pub_answer[4096];

static void start_publish(int seq) {
    char req[16384];
    int64_t t = now_ns();
    size_t len = publish_request(req, sizeof req, seq, t);
    pub_fd = connect_to(pub_port, 1);
    send_all(pub_fd, req, len);
    set_nonblocking(pub_fd);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PUB_TOKEN};
    epoll_ctl(epfd, EPOLL_CTL_ADD, pub_fd, &ev);
    pub_answer_len = 0;
}

static void read_publish_answer(void) {
    char buf[4096];
    ssize_t n = recv(pub_fd, buf, sizeof buf, 0);
    if (n > 0) {
        size_t room = sizeof pub_answer - 1 - (size_t)pub_answer_len;
        size_t take = (size_t)n < room ? (size_t)n : room;
        memcpy(pub_answer + pub_answer_len, buf, take);
        pub_answer_len += (int)take;
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    epoll_ctl(epfd, EPOLL_CTL_DEL, pub_fd, NULL);
    close(pub_fd);
    pub_fd = -1;
    pub_answer[pub_answer_len] = 0;
    int status = pub_answer_len > 12 ? atoi(pub_answer + 9) : 0;
    pub_count++;
    if (status < 200 || status >= 300) {
        pub_failures++;
        fprintf(stderr, "publish: HTTP %d\n", status);
    }
}

// Finds every complete marker in data[0..len); keeps an unfinished one for the next read.
static void scan(Sub *s, char *data, size_t len, int64_t t) {
    size_t i = 0;
    s->tail_len = 0;
    while (i < len) {
        char *at = memchr(data + i, '@', len - i);
        if (!at) return;
        size_t start = (size_t)(at - data), j = start + 1;
        long long seq = 0, ts = 0;
        int digits = 0, ok = 0;
        while (j < len && data[j] >= '0' && data[j] <= '9') { seq = seq * 10 + (data[j] - '0'); j++; digits++; }
        if (j < len && data[j] == ':' && digits > 0) {
            j++;
            int tdigits = 0;
            while (j < len && data[j] >= '0' && data[j] <= '9') { ts = ts * 10 + (data[j] - '0'); j++; tdigits++; }
            if (j < len && data[j] == '@' && tdigits > 0) ok = 1;
        }
        if (!ok && j >= len && len - start < TAIL) {  // may continue in the next read
            memcpy(s->tail, data + start, len - start);
            s->tail_len = (int)(len - start);
            return;
        }
        if (ok && seq >= 0 && seq < total_seqs) {
            if (s->latency_ns[seq] >= 0) s->duplicates++;
            else s->latency_ns[seq] = ts > 0 ? t - ts : 0;
            i = j + 1;
        } else {
            i = start + 1;
        }
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
    char *data = readbuf;
    size_t len = (size_t)n + (size_t)s->tail_len;
    if (!s->head_done) {
        size_t take = len < sizeof s->head - 1 - (size_t)s->head_len ? len : sizeof s->head - 1 - (size_t)s->head_len;
        memcpy(s->head + s->head_len, data, take);
        s->head_len += (int)take;
        s->head[s->head_len] = 0;
        char *end = strstr(s->head, "\r\n\r\n");
        if (!end) return;
        s->head_done = 1;
        s->status = s->head_len > 12 ? atoi(s->head + 9) : 0;
        size_t body_in_head = (size_t)(s->head + s->head_len - (end + 4));
        // The body bytes of this read: the last body_in_head bytes of data.
        data = readbuf + len - body_in_head;
        len = body_in_head;
        s->tail_len = 0;
    }
    scan(s, data, len, t);
}

static struct epoll_event events[1024];

static void pump(int64_t deadline, int (*done)(void)) {
    while (now_ns() < deadline && !(done && done())) {
        int64_t left_ms = (deadline - now_ns()) / 1000000;
        int n = epoll_wait(epfd, events, 1024, left_ms < 0 ? 0 : (left_ms > 50 ? 50 : (int)left_ms + 1));
        for (int k = 0; k < n; k++) {
            if (events[k].data.u64 == PUB_TOKEN) { read_publish_answer(); continue; }
            read_sub(&subs[events[k].data.u64]);
        }
    }
}

static int wait_seq;
static int all_have_seq(void) {
    for (int i = 0; i < subscribers; i++)
        if (subs[i].latency_ns[wait_seq] < 0) return 0;
    return 1;
}
static int all_heads(void) {
    for (int i = 0; i < subscribers; i++)
        if (!subs[i].head_done) return 0;
    return 1;
}
static int publish_done(void) { return pub_fd < 0; }
static int first_timed;
static int all_received(void) {
    for (int i = 0; i < subscribers; i++)
        for (int q = first_timed; q < total_seqs; q++)
            if (subs[i].latency_ns[q] < 0) return 0;
    return 1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct(int64_t *v, size_t n, double p) {
    if (n == 0) return -1;
    size_t i = (size_t)((double)n * p);
    if (i >= n) i = n - 1;
    return (double)v[i] / 1e6;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "missing value for %s\n", a); return 2; }
        i++;
        if (!strcmp(a, "--mode")) mode = v;
        else if (!strcmp(a, "--sub-ports")) {
            char *copy = strdup(v), *save;
            for (char *tok = strtok_r(copy, ",", &save); tok && nports < MAX_PORTS; tok = strtok_r(NULL, ",", &save)) sub_ports[nports++] = atoi(tok);
        } else if (!strcmp(a, "--pub-port")) pub_port = atoi(v);
        else if (!strcmp(a, "--subscribers")) subscribers = atoi(v);
        else if (!strcmp(a, "--publishes")) publishes = atoi(v);
        else if (!strcmp(a, "--interval-ms")) interval_ms = atoi(v);
        else if (!strcmp(a, "--sources")) sources = atoi(v);
        else if (!strcmp(a, "--items")) items = atoi(v);
        else if (!strcmp(a, "--pid") && npids < MAX_PIDS) pids[npids++] = atoi(v);
        else if (!strcmp(a, "--redis-pid")) redis_pid = atoi(v);
        else { fprintf(stderr, "unknown argument %s\n", a); return 2; }
    }
    nchan = !strcmp(mode, "nchan");
    if (nports == 0 || pub_port == 0) { fprintf(stderr, "--sub-ports and --pub-port are required\n"); return 2; }
    signal(SIGPIPE, SIG_IGN);
    epfd = epoll_create1(0);
    first_timed = 1 + warmups;
    total_seqs = first_timed + publishes;

    // 1. diffstream: the feed, with marker seq 0, before any subscriber.
    if (!nchan) {
        start_publish(0);
        pump(now_ns() + 10000000000LL, publish_done);
        if (pub_fd >= 0 || pub_failures) { fprintf(stderr, "could not create the feed\n"); return 1; }
        pub_count = 0;
    }
    long rss_before = servers_rss();

    // 2. Subscribers.
    subs = calloc((size_t)subscribers, sizeof(Sub));
    char req[512];
    int req_len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n",
                           nchan ? "/sub/fanout" : "/feeds/fanout/events");
    for (int i = 0; i < subscribers; i++) {
        Sub *s = &subs[i];
        s->port = sub_ports[i % nports];
        s->fd = connect_to(s->port, 1 + i % (sources > 0 ? sources : 1));
        s->latency_ns = malloc(sizeof(int64_t) * (size_t)total_seqs);
        for (int q = 0; q < total_seqs; q++) s->latency_ns[q] = -1;
        send_all(s->fd, req, (size_t)req_len);
        set_nonblocking(s->fd);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
        epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev);
        if (i % 256 == 255) pump(now_ns() + 1000000, NULL);  // read what arrived meanwhile
    }
    pump(now_ns() + 60000000000LL, all_heads);
    int bad_status = 0, heads = 0;
    for (int i = 0; i < subscribers; i++) {
        heads += subs[i].head_done;
        if (subs[i].head_done && subs[i].status != 200) bad_status++;
    }
    if (!nchan) {
        wait_seq = 0;
        pump(now_ns() + 60000000000LL, all_have_seq);
    }
    long rss_connected = servers_rss();

    // 3. Warm-up publish(es), untimed: every subscriber must see them (nchan's subscriptions in Redis
    // are in place, every diffstream instance follows the feed).
    int warm_missing = 0;
    for (int q = 1; q < first_timed; q++) {
        start_publish(q);
        pump(now_ns() + 10000000000LL, publish_done);
        wait_seq = q;
        pump(now_ns() + 30000000000LL, all_have_seq);
        for (int i = 0; i < subscribers; i++) warm_missing += subs[i].latency_ns[q] < 0;
    }
    pub_count = 0;
    pub_failures = 0;

    // 4. Timed publishes, interval_ms apart.
    double cpu_before = servers_cpu(), redis_before = redis_pid ? cpu_seconds(redis_pid) : 0, tool_before = own_cpu();
    int64_t started = now_ns();
    for (int q = first_timed; q < total_seqs; q++) {
        int64_t slot = started + (int64_t)(q - first_timed) * interval_ms * 1000000LL;
        pump(slot, NULL);
        if (pub_fd >= 0) pump(now_ns() + 10000000000LL, publish_done);  // the answer normally came long before
        start_publish(q);
    }
    pump(now_ns() + 10000000000LL, publish_done);
    pump(now_ns() + 10000000000LL, all_received);
    double cpu_after = servers_cpu(), redis_after = redis_pid ? cpu_seconds(redis_pid) : 0, tool_cpu = own_cpu() - tool_before;
    double wall = (double)(now_ns() - started) / 1e9;

    // 5. Figures: all deliveries, and split by the publishing instance (local) against the others.
    size_t cap = (size_t)subscribers * (size_t)publishes, n_all = 0, n_local = 0, n_remote = 0;
    int64_t *all = malloc(sizeof(int64_t) * cap), *local = malloc(sizeof(int64_t) * cap), *remote = malloc(sizeof(int64_t) * cap);
    long missing = 0, duplicates = 0, closed = 0;
    for (int i = 0; i < subscribers; i++) {
        Sub *s = &subs[i];
        duplicates += s->duplicates;
        closed += s->closed;
        for (int q = first_timed; q < total_seqs; q++) {
            int64_t l = s->latency_ns[q];
            if (l < 0) { missing++; continue; }
            all[n_all++] = l;
            if (s->port == pub_port) local[n_local++] = l;
            else remote[n_remote++] = l;
        }
    }
    qsort(all, n_all, sizeof(int64_t), cmp_i64);
    qsort(local, n_local, sizeof(int64_t), cmp_i64);
    qsort(remote, n_remote, sizeof(int64_t), cmp_i64);
    printf("target: %s  subscribers: %d over %d ports (heads %d, non-200 %d)  publishes: %d (failed %d)  warm-up missing: %d\n",
           mode, subscribers, nports, heads, bad_status, publishes, pub_failures, warm_missing);
    printf("latency ms: p50 %.2f  p99 %.2f  max %.2f  | publishing instance p50 %.2f p99 %.2f | other instances p50 %.2f p99 %.2f\n",
           pct(all, n_all, 0.5), pct(all, n_all, 0.99), pct(all, n_all, 1.0), pct(local, n_local, 0.5), pct(local, n_local, 0.99),
           pct(remote, n_remote, 0.5), pct(remote, n_remote, 0.99));
    double per_batch = (cpu_after - cpu_before) * 1000 / publishes;
    double redis_per_batch = (redis_after - redis_before) * 1000 / publishes;
    double kib = heads > 0 ? (double)(rss_connected - rss_before) / heads : -1;
    printf("delivered %zu  missing %ld  duplicates %ld  closed %ld | servers CPU %.1f ms/batch, redis CPU %.2f ms/batch, %.2f KiB/subscriber | tool CPU %.2f s over %.2f s (%.0f%% of a core)\n",
           n_all, missing, duplicates, closed, per_batch, redis_per_batch, kib, tool_cpu, wall, tool_cpu / wall * 100);
    printf("RESULT server=%s subscribers=%d p50=%.3f p99=%.3f max=%.3f local_p50=%.3f local_p99=%.3f remote_p50=%.3f remote_p99=%.3f "
           "delivered=%zu missing=%ld duplicates=%ld failed_publishes=%d bad_status=%d cpu_ms_per_batch=%.2f redis_cpu_ms_per_batch=%.3f "
           "kib_per_subscriber=%.3f tool_cpu_ms_per_batch=%.2f tool_core_pct=%.1f\n",
           mode, subscribers, pct(all, n_all, 0.5), pct(all, n_all, 0.99), pct(all, n_all, 1.0), pct(local, n_local, 0.5), pct(local, n_local, 0.99),
           pct(remote, n_remote, 0.5), pct(remote, n_remote, 0.99), n_all, missing, duplicates, pub_failures, bad_status, per_batch,
           redis_per_batch, kib, tool_cpu * 1000 / publishes, tool_cpu / wall * 100);
    for (int i = 0; i < subscribers; i++) close(subs[i].fd);
    return missing > 0 || pub_failures > 0 || bad_status > 0 ? 3 : 0;
}
