/*
 * gapwatch copy trace: names the host memory behind every host<->device copy of a CUDA process.
 *
 * Loaded into the prover by the CUDA driver itself: start the prover with
 * CUDA_INJECTION64_PATH=/path/libgapwatch_copytrace.so and cuInit() dlopens this library and
 * calls InitializeInjection(). Built and installed by `gapwatch copytrace build`
 * (gapwatch/copytrace/build.py); read by gapwatch's copy-trace source
 * (gapwatch/sources/copytrace.py, wire format in gapwatch/copytrace/wire.py); documented in
 * docs/copytrace.md.
 *
 * What it does: CUPTI's Activity API records every memcpy (CUPTI_ACTIVITY_KIND_MEMCPY, the
 * CUpti_ActivityMemcpy6 layout of CUDA 13) with its copy kind, the source and destination
 * memory kinds (PAGEABLE, PINNED, DEVICE...), bytes and start/end on CLOCK_REALTIME (a timestamp
 * callback), device, context, stream and correlation id. A thread of this library asks CUPTI for
 * the completed records every flush period (100 ms; CUPTI's own periodic flush returns only
 * *full* buffers, which a prover's few large copies never fill); host<->device copies are
 * packed into datagrams and sent, without ever waiting, to a Unix datagram socket gapwatch
 * listens on.
 *
 * Rules it keeps:
 * - It never changes what the prover does: every failure (no libcupti, another CUPTI client such
 *   as Nsight or a profiler, a CUPTI error, a CUPTI of another release, major or minor, than the
 *   headers it was built with: GWCT_CUPTI_RELEASE) is said once on stderr and the library does
 *   nothing more. InitializeInjection
 *   always reports success to the driver, so cuInit is never failed on our account.
 * - Bounded memory: a fixed pool of activity buffers, allocated once. When all are in use CUPTI
 *   is given none and drops records itself (counted with cuptiActivityGetNumDroppedRecords).
 * - No blocking: the socket is non-blocking and every send is MSG_DONTWAIT. If gapwatch is
 *   absent, slow or restarting, the datagram is dropped and counted; counts travel in-band in
 *   the header of every later datagram, so gapwatch learns what it missed.
 * - libcupti is dlopen'ed, not linked: the library loads in any process, and a missing libcupti
 *   is a plain message instead of a loader failure inside cuInit.
 *
 * Environment (read once, at initialisation):
 *   GAPWATCH_COPYTRACE_SOCKET    where gapwatch listens (default: gapwatch-copytrace.sock in
 *                                $XDG_RUNTIME_DIR or /run/user/UID when that is a private folder,
 *                                else $TMPDIR/gapwatch-UID/copytrace.sock; /tmp without TMPDIR).
 *                                The same rule as gapwatch/copytrace/socket_path.py. "Private":
 *                                a folder, not a link, owned by UID, not writable by group or
 *                                others. Copies are sent to a default path only while its folder
 *                                is private: a folder another user made is never sent to.
 *   GAPWATCH_COPYTRACE_FLUSH_MS  flush period in ms (default 100, 10..10000)
 *   GAPWATCH_COPYTRACE_OFF=1     load, say so, and do nothing (a switch that needs no unit edit)
 *   GAPWATCH_CUPTI_LIB           libcupti to load (default: one already loaded, then the path
 *                                found at build time, then libcupti.so.<major> from the loader path)
 *
 * Wire format (version 1, little-endian; the Python reader checks every size and field):
 *   datagram = 64-byte header + n_records x record_bytes
 *   header:  u32 magic "GWCT", u16 version, u16 header_bytes, u16 type, u16 record_bytes,
 *            u16 n_records, u16 reserved, u32 pid, u32 reserved, u64 session_id, u64 seq,
 *            u64 copies_seen, u64 dropped_send, u64 dropped_cupti
 *   types:   1 COPIES (64-byte copy records), 3 HELLO (one 48-byte record),
 *            4 NOTE (UTF-8 text), 5 BYE (no records: the process is exiting)
 *   copy:    u64 start_ns, u64 end_ns, u64 bytes, u32 device_id, u32 context_id, u32 stream_id,
 *            u32 correlation_id, u8 copy_kind, u8 src_kind, u8 dst_kind, u8 flags,
 *            u32 copy_count, u8 device_uuid[16]
 */

#define _GNU_SOURCE
#include <cupti.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GWCT_EXPORT __attribute__((visibility("default")))

#define GWCT_MAGIC 0x54435747u /* the bytes "GWCT" read as a little-endian u32 */
#define GWCT_VERSION 1
#define GWCT_LIB_VERSION 1
enum { GWCT_COPIES = 1, GWCT_HELLO = 3, GWCT_NOTE = 4, GWCT_BYE = 5 };

/* Bit flags of the HELLO record. */
#define GWCT_HELLO_REALTIME 1u       /* start/end are CLOCK_REALTIME (timestamp callback) */
#define GWCT_HELLO_PCI_BUS_ORDER 2u  /* CUDA_DEVICE_ORDER=PCI_BUS_ID in the process */
#define GWCT_HELLO_VISIBLE_SET 4u    /* CUDA_VISIBLE_DEVICES is set in the process */

/* The CUPTI release (cuptiGetVersion's xxyyzz without zz: 1300 is CUDA 13.0) whose activity
 * records this file was compiled to read. CUPTI hands every record in the newest layout of its
 * own release, and layouts change inside a major: Device5 is among the deprecated types from
 * 13.2, Memcpy6 gives way to Memcpy7 in the 13.4 developer preview. So the CUPTI loaded at run
 * time must be of this very release (major AND minor; the zz update keeps layouts), or nothing
 * is read: refused once, said on stderr and to gapwatch (a NOTE), the prover untouched. */
#define GWCT_CUPTI_RELEASE (CUPTI_API_VERSION / 100)
/* The releases whose MEMCPY and DEVICE records are CUpti_ActivityMemcpy6 and
 * CUpti_ActivityDevice5 with the offsets asserted below (checked in the CUDA 13.0 headers).
 * A release is added here only once its headers have been read. */
#define GWCT_LAYOUT_RELEASES_TEXT "13.0"
static int layout_release_known(uint32_t release) { return release == 1300; }
#ifndef GWCT_CUPTI_DEFAULT
#define GWCT_CUPTI_DEFAULT ""
#endif

#if CUPTI_API_VERSION < 130000 || CUPTI_API_VERSION >= 130100
#error "gapwatch copytrace reads the CUPTI record layouts of CUDA 13.0 (Memcpy6, Device5): build it with the CUDA 13.0 headers (pip install 'nvidia-cuda-cupti>=13.0,<13.1' 'nvidia-cuda-runtime>=13.0,<13.1' 'nvidia-cuda-crt>=13.0,<13.1', or --cuda-include DIR)"
#endif

struct gwct_header {
    uint32_t magic;
    uint16_t version;
    uint16_t header_bytes;
    uint16_t type;
    uint16_t record_bytes;
    uint16_t n_records;
    uint16_t reserved0;
    uint32_t pid;
    uint32_t reserved1;
    uint64_t session_id;
    uint64_t seq;
    uint64_t copies_seen;
    uint64_t dropped_send;
    uint64_t dropped_cupti;
};

struct gwct_copy {
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t bytes;
    uint32_t device_id;
    uint32_t context_id;
    uint32_t stream_id;
    uint32_t correlation_id;
    uint8_t copy_kind;
    uint8_t src_kind;
    uint8_t dst_kind;
    uint8_t flags;
    uint32_t copy_count;
    uint8_t device_uuid[16];
};

struct gwct_hello {
    uint32_t lib_version;
    uint32_t cupti_api_built;
    uint32_t cupti_api_loaded;
    uint32_t flush_ms;
    uint32_t flags;
    uint32_t reserved0;
    char comm[16];
    uint64_t reserved1;
};

/* The wire layout is a protocol: any change here must change GWCT_VERSION and wire.py. */
_Static_assert(sizeof(struct gwct_header) == 64, "header is 64 bytes");
_Static_assert(offsetof(struct gwct_header, pid) == 16, "header.pid at 16");
_Static_assert(offsetof(struct gwct_header, session_id) == 24, "header.session_id at 24");
_Static_assert(offsetof(struct gwct_header, dropped_cupti) == 56, "header.dropped_cupti at 56");
_Static_assert(sizeof(struct gwct_copy) == 64, "copy record is 64 bytes");
_Static_assert(offsetof(struct gwct_copy, device_id) == 24, "copy.device_id at 24");
_Static_assert(offsetof(struct gwct_copy, copy_kind) == 40, "copy.copy_kind at 40");
_Static_assert(offsetof(struct gwct_copy, copy_count) == 44, "copy.copy_count at 44");
_Static_assert(offsetof(struct gwct_copy, device_uuid) == 48, "copy.device_uuid at 48");
_Static_assert(sizeof(struct gwct_hello) == 48, "hello record is 48 bytes");
/* What this file reads from CUPTI must be what CUDA 13 defines (a layout of another CUDA major
 * would be read as garbage); tests/test_copytrace_build.py checks the same offsets. */
_Static_assert(offsetof(CUpti_ActivityMemcpy6, copyKind) == 4, "Memcpy6.copyKind at 4");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, bytes) == 8, "Memcpy6.bytes at 8");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, start) == 16, "Memcpy6.start at 16");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, deviceId) == 32, "Memcpy6.deviceId at 32");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, correlationId) == 44, "Memcpy6.correlationId at 44");

/* Most copy records in one datagram (64 x 64 bytes + header: well under any socket limit). */
#define GWCT_BATCH 64
/* Activity buffers: a fixed pool, allocated once (bounded memory in the prover). */
#define GWCT_N_BUFFERS 8
#define GWCT_BUFFER_BYTES (256u * 1024u)
#define GWCT_MAX_DEVICES 64

/* CUPTI entry points, resolved with dlsym from the libcupti we load. */
struct gwct_cupti {
    void *handle;
    __typeof__(&cuptiGetVersion) GetVersion;
    __typeof__(&cuptiGetResultString) GetResultString;
    __typeof__(&cuptiSubscribe) Subscribe;
    __typeof__(&cuptiSubscribe_v2) Subscribe_v2;
    __typeof__(&cuptiActivityRegisterCallbacks) RegisterCallbacks;
    __typeof__(&cuptiActivityRegisterTimestampCallback) RegisterTimestampCallback;
    __typeof__(&cuptiActivityEnable) Enable;
    __typeof__(&cuptiActivityFlushPeriod) FlushPeriod;
    __typeof__(&cuptiActivityFlushAll) FlushAll;
    __typeof__(&cuptiActivityGetNextRecord) GetNextRecord;
    __typeof__(&cuptiActivityGetNumDroppedRecords) GetNumDroppedRecords;
};

static struct {
    int initialised;
    int active;                 /* CUPTI is recording for us */
    int stopping;               /* at exit: the flush thread stops (atomic) */
    pid_t pid;                  /* the process that initialised (a forked child is not it) */
    uint64_t session_id;
    uint32_t flush_ms;
    uint32_t cupti_loaded;
    uint32_t hello_flags;
    int fd;
    struct sockaddr_un addr;
    socklen_t addr_len;
    char folder[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* checked before each send: a
                                                                 default path's folder, or "" */
    int said_folder;            /* the folder's problem was said on stderr */
    pthread_mutex_t send_lock;  /* encoder state below; never taken on the prover's threads */
    uint64_t seq;
    uint64_t copies_seen;
    uint64_t dropped_send;
    uint64_t dropped_cupti;
    int need_hello;             /* (re)send HELLO before the next datagram */
    int last_errno;             /* errno of the last failed send (0: the last one was delivered) */
    uint64_t said_errnos;       /* errnos < 64 already reported on stderr */
    struct gwct_copy batch[GWCT_BATCH];
    int n_batch;
    uint8_t uuids[GWCT_MAX_DEVICES][16];
    uint8_t uuid_known[GWCT_MAX_DEVICES];
    uint8_t *buffers[GWCT_N_BUFFERS];
    unsigned int buffer_used;   /* bit i: buffers[i] is lent to CUPTI (atomic) */
    struct gwct_cupti cupti;
} g = {.fd = -1, .send_lock = PTHREAD_MUTEX_INITIALIZER};

/* One line on the prover's stderr, prefixed so that it is found in its journal. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "gapwatch-copytrace[%d]: ", (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CUPTI's timestamp callback: every record carries CLOCK_REALTIME, the clock of the prover's
 * log lines and of gapwatch's wall times. */
static uint64_t CUPTIAPI timestamp_cb(void) { return realtime_ns(); }

/* ---------------------------------------------------------------- the socket */

/* Why `dir` is not private to `uid` (NULL when it is): a folder, not a symbolic link, owned by
 * `uid`, that neither its group nor others may write to. socket_path.folder_problem in Python. */
static const char *folder_problem(const char *dir, uid_t uid) {
    struct stat st;
    if (lstat(dir, &st) != 0) return errno == ENOENT ? "does not exist" : "cannot be read";
    if (S_ISLNK(st.st_mode)) return "is a symbolic link";
    if (!S_ISDIR(st.st_mode)) return "is not a folder";
    if (st.st_uid != uid) return "belongs to another user";
    if (st.st_mode & 022) return "can be written by others";
    return NULL;
}

/* The default socket path (socket_path.default_socket_path in Python); its folder, to check
 * before each send, goes to `folder`. */
static void default_socket_path(char *out, size_t n, char *folder, size_t folder_n) {
    uid_t uid = getuid();
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *tmp = getenv("TMPDIR");
    /* A folder is a candidate only if the socket's path in it fits a Unix socket address. */
    size_t room = sizeof g.addr.sun_path - 1;
    char dir[sizeof g.addr.sun_path];
    if (xdg != NULL && xdg[0] == '/' && strlen(xdg) + strlen("/gapwatch-copytrace.sock") <= room
            && folder_problem(xdg, uid) == NULL) {
        snprintf(dir, sizeof dir, "%s", xdg);
        snprintf(out, n, "%s/gapwatch-copytrace.sock", dir);
    } else {
        snprintf(dir, sizeof dir, "/run/user/%u", (unsigned)uid);
        if (folder_problem(dir, uid) == NULL) {
            snprintf(out, n, "%s/gapwatch-copytrace.sock", dir);
        } else {
            if (tmp == NULL || tmp[0] != '/' ||
                    strlen(tmp) + strlen("/gapwatch-4294967295/copytrace.sock") > room)
                tmp = "/tmp";
            snprintf(dir, sizeof dir, "%s/gapwatch-%u", tmp, (unsigned)uid);
            snprintf(out, n, "%s/copytrace.sock", dir);
        }
    }
    snprintf(folder, folder_n, "%s", dir);
}

static int open_socket(const char *path) {
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof g.addr.sun_path) {
        say("socket path %s is empty or too long for a Unix socket: copy trace off", path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        say("cannot create a Unix datagram socket (%s): copy trace off", strerror(errno));
        return -1;
    }
    memset(&g.addr, 0, sizeof g.addr);
    g.addr.sun_family = AF_UNIX;
    memcpy(g.addr.sun_path, path, len + 1);
    g.addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    g.fd = fd;
    return 0;
}

static void fill_header(struct gwct_header *h, uint16_t type, uint16_t record_bytes,
                        uint16_t n) {
    memset(h, 0, sizeof *h);
    h->magic = GWCT_MAGIC;
    h->version = GWCT_VERSION;
    h->header_bytes = (uint16_t)sizeof *h;
    h->type = type;
    h->record_bytes = record_bytes;
    h->n_records = n;
    h->pid = (uint32_t)g.pid;
    h->session_id = g.session_id;
    h->seq = g.seq++;
    h->copies_seen = g.copies_seen;
    h->dropped_send = g.dropped_send;
    h->dropped_cupti = g.dropped_cupti;
}

/* One datagram, never waiting. Returns 1 when delivered. Caller holds send_lock. */
static int send_datagram(const void *payload, size_t payload_bytes, uint16_t type,
                         uint16_t record_bytes, uint16_t n) {
    unsigned char buf[sizeof(struct gwct_header) + GWCT_BATCH * sizeof(struct gwct_copy)];
    struct gwct_header h;
    if (g.fd < 0 || payload_bytes > sizeof buf - sizeof h) return 0;
    if (g.folder[0]) {
        /* A default path: only while its folder is ours. One that another user made (or a link,
         * or one others may write to) could hold their socket: the copies are not sent there. */
        const char *why = folder_problem(g.folder, getuid());
        if (why != NULL && strcmp(why, "does not exist") != 0) {
            if (!g.said_folder) {
                g.said_folder = 1;
                say("not sending to %s: its folder %s %s (another user could listen there); "
                    "copies are dropped and counted", g.addr.sun_path, g.folder, why);
            }
            g.last_errno = EPERM;
            return 0;
        }
    }
    fill_header(&h, type, record_bytes, n);
    memcpy(buf, &h, sizeof h);
    if (payload_bytes) memcpy(buf + sizeof h, payload, payload_bytes);
    ssize_t sent = sendto(g.fd, buf, sizeof h + payload_bytes, MSG_DONTWAIT | MSG_NOSIGNAL,
                          (struct sockaddr *)&g.addr, g.addr_len);
    if (sent == (ssize_t)(sizeof h + payload_bytes)) {
        if (g.last_errno != 0) g.need_hello = 1; /* a listener is back: tell it who we are */
        g.last_errno = 0;
        return 1;
    }
    int err = sent < 0 ? errno : EMSGSIZE;
    if (err >= 0 && err < 64 && !(g.said_errnos & (1ull << err))) {
        g.said_errnos |= 1ull << err;
        say("cannot send to %s (%s): is gapwatch listening (--copytrace)? Copies are dropped "
            "and counted meanwhile; the prover is not affected", g.addr.sun_path, strerror(err));
    }
    g.last_errno = err;
    return 0;
}

static void send_hello(void) {
    struct gwct_hello hello;
    memset(&hello, 0, sizeof hello);
    hello.lib_version = GWCT_LIB_VERSION;
    hello.cupti_api_built = CUPTI_API_VERSION;
    hello.cupti_api_loaded = g.cupti_loaded;
    hello.flush_ms = g.flush_ms;
    hello.flags = g.hello_flags;
    FILE *f = fopen("/proc/self/comm", "re");
    if (f != NULL) {
        if (fgets(hello.comm, sizeof hello.comm, f) != NULL)
            hello.comm[strcspn(hello.comm, "\n")] = '\0';
        fclose(f);
    }
    g.need_hello = 0;
    if (!send_datagram(&hello, sizeof hello, GWCT_HELLO, (uint16_t)sizeof hello, 1))
        g.need_hello = 1;
}

static void send_note(const char *text) {
    size_t n = strlen(text);
    if (n > 1024) n = 1024;
    send_datagram(text, n, GWCT_NOTE, (uint16_t)n, 1);
}

/* Send the pending copy records (or, with none, the counters alone). Caller holds send_lock. */
static void flush_batch(int even_empty) {
    if (g.n_batch == 0 && !even_empty) return;
    if (g.need_hello) send_hello();
    int n = g.n_batch;
    g.n_batch = 0;
    if (!send_datagram(g.batch, (size_t)n * sizeof(struct gwct_copy), GWCT_COPIES,
                       (uint16_t)sizeof(struct gwct_copy), (uint16_t)n))
        g.dropped_send += (uint64_t)n;
}

/* ---------------------------------------------------------------- CUPTI buffers */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *max_records = 0;
    for (int i = 0; i < GWCT_N_BUFFERS; i++) {
        unsigned int bit = 1u << i;
        unsigned int old = __atomic_fetch_or(&g.buffer_used, bit, __ATOMIC_ACQ_REL);
        if (!(old & bit)) {
            *buffer = g.buffers[i];
            *size = GWCT_BUFFER_BYTES;
            return;
        }
    }
    /* Every buffer is with CUPTI or being read: decline; CUPTI drops and counts. */
    *buffer = NULL;
    *size = 0;
}

static void release_buffer(uint8_t *buffer) {
    for (int i = 0; i < GWCT_N_BUFFERS; i++) {
        if (g.buffers[i] == buffer) {
            __atomic_fetch_and(&g.buffer_used, ~(1u << i), __ATOMIC_ACQ_REL);
            return;
        }
    }
}

static int is_host_device_copy(uint8_t copy_kind) {
    return copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD || copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
        || copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA || copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH;
}

static void add_copy(const CUpti_ActivityMemcpy6 *m) {
    struct gwct_copy *c = &g.batch[g.n_batch++];
    memset(c, 0, sizeof *c);
    c->start_ns = m->start;
    c->end_ns = m->end;
    c->bytes = m->bytes;
    c->device_id = m->deviceId;
    c->context_id = m->contextId;
    c->stream_id = m->streamId;
    c->correlation_id = m->correlationId;
    c->copy_kind = m->copyKind;
    c->src_kind = m->srcKind;
    c->dst_kind = m->dstKind;
    c->flags = m->flags;
    c->copy_count = (uint32_t)m->copyCount;
    if (m->deviceId < GWCT_MAX_DEVICES && g.uuid_known[m->deviceId])
        memcpy(c->device_uuid, g.uuids[m->deviceId], 16);
    g.copies_seen++;
    if (g.n_batch == GWCT_BATCH) flush_batch(0);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
    (void)size;
    CUpti_Activity *record = NULL;
    size_t dropped = 0;
    uint64_t before;
    pthread_mutex_lock(&g.send_lock);
    before = g.dropped_cupti;
    /* Until CUPTI_ERROR_MAX_LIMIT_REACHED (the end) or an incomplete record. */
    while (g.cupti.GetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)record;
            if (is_host_device_copy(m->copyKind)) add_copy(m);
        } else if (record->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
            const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)record;
            if (d->id < GWCT_MAX_DEVICES) {
                memcpy(g.uuids[d->id], d->uuid.bytes, 16);
                g.uuid_known[d->id] = 1;
            }
        }
    }
    if (g.cupti.GetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
        g.dropped_cupti += dropped;
    flush_batch(g.dropped_cupti != before);
    pthread_mutex_unlock(&g.send_lock);
    if (buffer != NULL) release_buffer(buffer);
}

/* ---------------------------------------------------------------- start and exit */

/* CUPTI's periodic flush (cuptiActivityFlushPeriod) returns only buffers that are full, and a
 * prover's copies (a few large ones per partition) take minutes to fill one: without this the
 * records would arrive at exit. cuptiActivityFlushAll(0) returns every buffer whose records are
 * all complete, full or not; the buffer callback then runs on this thread. It only sleeps and
 * calls CUPTI: nothing here touches the prover's threads. */
static void *flush_loop(void *arg) {
    (void)arg;
    struct timespec period = {(time_t)(g.flush_ms / 1000), (long)(g.flush_ms % 1000) * 1000000L};
    while (!__atomic_load_n(&g.stopping, __ATOMIC_ACQUIRE)) {
        nanosleep(&period, NULL);
        if (__atomic_load_n(&g.stopping, __ATOMIC_ACQUIRE)) break;
        g.cupti.FlushAll(0);
    }
    return NULL;
}

static void start_flush_thread(void) {
    pthread_t thread;
    pthread_attr_t attr;
    int r = pthread_attr_init(&attr);
    if (r == 0) r = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (r == 0) r = pthread_create(&thread, &attr, flush_loop, NULL);
    pthread_attr_destroy(&attr);
    if (r != 0)
        say("cannot start the flush thread (%s): copies arrive only when CUPTI's buffers fill "
            "and at exit", strerror(r));
}

static void at_exit(void) {
    if (!g.active || getpid() != g.pid) return; /* a forked child: not the traced process */
    __atomic_store_n(&g.stopping, 1, __ATOMIC_RELEASE);
    g.cupti.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g.send_lock);
    flush_batch(0);
    send_datagram(NULL, 0, GWCT_BYE, 0, 0);
    pthread_mutex_unlock(&g.send_lock);
}

static void *load_cupti(void) {
    char soname[32];
    snprintf(soname, sizeof soname, "libcupti.so.%d", CUPTI_API_VERSION / 10000);
    const char *env = getenv("GAPWATCH_CUPTI_LIB");
    if (env != NULL && *env) return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    /* A CUPTI the process already holds first: two copies in one process would fight. */
    void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL && GWCT_CUPTI_DEFAULT[0]) h = dlopen(GWCT_CUPTI_DEFAULT, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    return h;
}

#define GWCT_SYM(field, name) (*(void **)(&g.cupti.field) = dlsym(g.cupti.handle, name))

static const char *cupti_error(CUptiResult r) {
    const char *text = NULL;
    if (g.cupti.GetResultString == NULL || g.cupti.GetResultString(r, &text) != CUPTI_SUCCESS
        || text == NULL)
        return "CUPTI error";
    return text;
}

static void CUPTIAPI no_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *cbdata) {
    (void)userdata; (void)domain; (void)cbid; (void)cbdata;
}

/* Everything that can fail, in order; 0 when CUPTI records copies for us. */
static int start_tracing(void) {
    char msg[512];
    g.cupti.handle = load_cupti();
    if (g.cupti.handle == NULL) {
        say("cannot load libcupti (%s): set GAPWATCH_CUPTI_LIB or rebuild with "
            "`gapwatch copytrace build`; copy trace off", dlerror());
        return -1;
    }
    GWCT_SYM(GetVersion, "cuptiGetVersion");
    GWCT_SYM(GetResultString, "cuptiGetResultString");
    GWCT_SYM(Subscribe, "cuptiSubscribe");
    GWCT_SYM(Subscribe_v2, "cuptiSubscribe_v2");
    GWCT_SYM(RegisterCallbacks, "cuptiActivityRegisterCallbacks");
    GWCT_SYM(RegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback");
    GWCT_SYM(Enable, "cuptiActivityEnable");
    GWCT_SYM(FlushPeriod, "cuptiActivityFlushPeriod");
    GWCT_SYM(FlushAll, "cuptiActivityFlushAll");
    GWCT_SYM(GetNextRecord, "cuptiActivityGetNextRecord");
    GWCT_SYM(GetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
    if (!g.cupti.GetVersion || !g.cupti.Subscribe || !g.cupti.RegisterCallbacks || !g.cupti.Enable
        || !g.cupti.FlushPeriod || !g.cupti.FlushAll || !g.cupti.GetNextRecord
        || !g.cupti.GetNumDroppedRecords) {
        say("the loaded libcupti lacks the Activity API functions this library needs; "
            "copy trace off");
        return -1;
    }
    uint32_t version = 0;
    if (g.cupti.GetVersion(&version) != CUPTI_SUCCESS) version = 0;
    g.cupti_loaded = version;
    if (version / 100 != GWCT_CUPTI_RELEASE || !layout_release_known(version / 100)) {
        /* Before any Subscribe or Enable: CUPTI stays untouched, free for another tool. */
        snprintf(msg, sizeof msg, "the loaded CUPTI is %u.%u (API version %u) but this library "
                 "reads only the record layouts of CUPTI %s (Memcpy6, Device5; built with API "
                 "version %d): another release may hand records it would misread. Copy trace "
                 "off in this process; the prover runs on untouched. Load CUPTI %s "
                 "(GAPWATCH_CUPTI_LIB) or use a gapwatch that knows this release",
                 (unsigned)(version / 10000), (unsigned)(version / 100 % 100), (unsigned)version,
                 GWCT_LAYOUT_RELEASES_TEXT, CUPTI_API_VERSION, GWCT_LAYOUT_RELEASES_TEXT);
        say("%s", msg);
        pthread_mutex_lock(&g.send_lock);
        send_note(msg);
        pthread_mutex_unlock(&g.send_lock);
        return -1;
    }
    /* Claim CUPTI the documented way: one subscriber per process. If Nsight, a profiler or
     * cuda-gdb holds it, step aside rather than fight over the activity buffers. */
    CUpti_SubscriberHandle sub;
    CUptiResult r;
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1];
    memset(other, 0, sizeof other);
    if (g.cupti.Subscribe_v2 != NULL) {
        CUpti_SubscriberParams params;
        memset(&params, 0, sizeof params);
        params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        params.subscriberName = "gapwatch copytrace";
        params.oldSubscriberName = other;
        params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
        r = g.cupti.Subscribe_v2(&sub, no_callback, NULL, &params);
    } else {
        r = g.cupti.Subscribe(&sub, no_callback, NULL);
    }
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(msg, sizeof msg, "CUPTI is already in use by another tool%s%s (Nsight, a "
                 "profiler, cuda-gdb): copy trace off in this process, the other tool keeps it",
                 other[0] ? ": " : "", other);
        say("%s", msg);
        pthread_mutex_lock(&g.send_lock);
        send_note(msg);
        pthread_mutex_unlock(&g.send_lock);
        return -1;
    }
    if (r != CUPTI_SUCCESS) {
        say("cuptiSubscribe failed (%s): copy trace off", cupti_error(r));
        return -1;
    }
    for (int i = 0; i < GWCT_N_BUFFERS; i++) {
        /* CUPTI wants 8-byte aligned buffers. */
        if (posix_memalign((void **)&g.buffers[i], 8, GWCT_BUFFER_BYTES) != 0) {
            g.buffers[i] = NULL;
            __atomic_fetch_or(&g.buffer_used, 1u << i, __ATOMIC_ACQ_REL); /* never lend it */
        }
    }
    if (g.cupti.RegisterTimestampCallback != NULL
        && g.cupti.RegisterTimestampCallback(timestamp_cb) == CUPTI_SUCCESS)
        g.hello_flags |= GWCT_HELLO_REALTIME;
    else
        say("cannot register the CLOCK_REALTIME timestamp callback: copy times are CUPTI's "
            "own clock");
    r = g.cupti.RegisterCallbacks(buffer_requested, buffer_completed);
    if (r == CUPTI_SUCCESS) r = g.cupti.Enable(CUPTI_ACTIVITY_KIND_DEVICE);
    if (r == CUPTI_SUCCESS) r = g.cupti.Enable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (r == CUPTI_SUCCESS) r = g.cupti.FlushPeriod(g.flush_ms);
    if (r != CUPTI_SUCCESS) {
        say("cannot start CUPTI activity tracing (%s): copy trace off", cupti_error(r));
        __typeof__(&cuptiUnsubscribe) unsubscribe;
        *(void **)(&unsubscribe) = dlsym(g.cupti.handle, "cuptiUnsubscribe");
        if (unsubscribe != NULL) unsubscribe(sub); /* leave CUPTI free for another tool */
        return -1;
    }
    return 0;
}

static void read_environment(void) {
    const char *order = getenv("CUDA_DEVICE_ORDER");
    if (order != NULL && strcmp(order, "PCI_BUS_ID") == 0) g.hello_flags |= GWCT_HELLO_PCI_BUS_ORDER;
    if (getenv("CUDA_VISIBLE_DEVICES") != NULL) g.hello_flags |= GWCT_HELLO_VISIBLE_SET;
    g.flush_ms = 100;
    const char *flush = getenv("GAPWATCH_COPYTRACE_FLUSH_MS");
    if (flush != NULL && *flush) {
        long v = strtol(flush, NULL, 10);
        if (v >= 10 && v <= 10000) g.flush_ms = (uint32_t)v;
        else say("GAPWATCH_COPYTRACE_FLUSH_MS=%s is not 10..10000: using 100", flush);
    }
}

/* Called by the CUDA driver inside cuInit when CUDA_INJECTION64_PATH names this library. */
GWCT_EXPORT int InitializeInjection(void) {
    char path[sizeof g.addr.sun_path + 64];
    if (g.initialised) return 1;
    g.initialised = 1;
    g.pid = getpid();
    g.session_id = realtime_ns();
    const char *off = getenv("GAPWATCH_COPYTRACE_OFF");
    if (off != NULL && *off && strcmp(off, "0") != 0) {
        say("GAPWATCH_COPYTRACE_OFF is set: copy trace off");
        return 1;
    }
    read_environment();
    const char *env_path = getenv("GAPWATCH_COPYTRACE_SOCKET");
    if (env_path != NULL && *env_path) snprintf(path, sizeof path, "%s", env_path);
    else default_socket_path(path, sizeof path, g.folder, sizeof g.folder);
    if (open_socket(path) != 0) return 1;
    if (start_tracing() != 0) return 1;
    g.active = 1;
    g.need_hello = 1;
    atexit(at_exit);
    start_flush_thread();
    say("tracing host<->device copies to %s every %u ms (gapwatch --copytrace)", path,
        (unsigned)g.flush_ms);
    return 1;
}

/* ---------------------------------------------------------------- for tests and the build */

/* Offsets this build reads and writes, as one line of `name=value` pairs: the build command
 * and the tests compare them with what gapwatch/copytrace/wire.py expects. */
GWCT_EXPORT int gapwatch_copytrace_layout(char *out, size_t n) {
    return snprintf(out, n,
        "cupti_api=%d memcpy6.size=%zu memcpy6.copyKind=%zu memcpy6.srcKind=%zu "
        "memcpy6.dstKind=%zu memcpy6.flags=%zu memcpy6.bytes=%zu memcpy6.start=%zu "
        "memcpy6.end=%zu memcpy6.deviceId=%zu memcpy6.contextId=%zu memcpy6.streamId=%zu "
        "memcpy6.correlationId=%zu memcpy6.copyCount=%zu device5.id=%zu device5.uuid=%zu "
        "wire.version=%d wire.header=%zu wire.copy=%zu wire.hello=%zu",
        CUPTI_API_VERSION, sizeof(CUpti_ActivityMemcpy6),
        offsetof(CUpti_ActivityMemcpy6, copyKind), offsetof(CUpti_ActivityMemcpy6, srcKind),
        offsetof(CUpti_ActivityMemcpy6, dstKind), offsetof(CUpti_ActivityMemcpy6, flags),
        offsetof(CUpti_ActivityMemcpy6, bytes), offsetof(CUpti_ActivityMemcpy6, start),
        offsetof(CUpti_ActivityMemcpy6, end), offsetof(CUpti_ActivityMemcpy6, deviceId),
        offsetof(CUpti_ActivityMemcpy6, contextId), offsetof(CUpti_ActivityMemcpy6, streamId),
        offsetof(CUpti_ActivityMemcpy6, correlationId),
        offsetof(CUpti_ActivityMemcpy6, copyCount), offsetof(CUpti_ActivityDevice5, id),
        offsetof(CUpti_ActivityDevice5, uuid), GWCT_VERSION, sizeof(struct gwct_header),
        sizeof(struct gwct_copy), sizeof(struct gwct_hello));
}

GWCT_EXPORT int gapwatch_copytrace_selftest(const char *path, uint32_t n);

/* The default socket path as this library computes it (for the tests: gapwatch must agree). */
GWCT_EXPORT int gapwatch_copytrace_default_socket(char *out, size_t n) {
    char folder[sizeof g.addr.sun_path];
    default_socket_path(out, n, folder, sizeof folder);
    return (int)strlen(out);
}

/* Send to `path` as if it were the default path (its folder checked before each send): the
 * tests' way to see that a folder another user could write to is never sent to. */
GWCT_EXPORT int gapwatch_copytrace_selftest_default(const char *path, uint32_t n) {
    const char *slash = strrchr(path, '/');
    size_t len = slash != NULL ? (size_t)(slash - path) : 0;
    if (len >= sizeof g.folder) return -1;
    memcpy(g.folder, path, len);
    g.folder[len] = '\0';
    return gapwatch_copytrace_selftest(path, n);
}

/* Send a HELLO, `n` synthetic copies (through the same encoder and socket code as CUPTI's
 * records) and a BYE to `path`, with no CUDA and no CUPTI: the tests read them back with
 * gapwatch's reader. Returns how many copy records were delivered. Not called by the driver. */
GWCT_EXPORT int gapwatch_copytrace_selftest(const char *path, uint32_t n) {
    CUpti_ActivityMemcpy6 m;
    uint64_t delivered_before;
    if (g.active) return -1; /* never inside a traced process */
    if (g.fd < 0) {
        g.pid = getpid();
        g.session_id = realtime_ns();
        g.flush_ms = 100;
        /* As a CUPTI of the release it was built for would say (the reader checks it). */
        g.cupti_loaded = CUPTI_API_VERSION;
        if (open_socket(path) != 0) return -1;
    }
    pthread_mutex_lock(&g.send_lock);
    g.uuid_known[0] = 1;
    for (int i = 0; i < 16; i++) g.uuids[0][i] = (uint8_t)(0xa0 + i);
    send_hello();
    delivered_before = g.copies_seen - g.dropped_send;
    /* Copies 1 ms apart that ended just now, as live ones do: gapwatch refuses a copy that
     * ended long before it arrived (a clock far off, or garbage). */
    uint64_t first_start = realtime_ns() - (uint64_t)n * 1000000ull - 1000000ull;
    for (uint32_t i = 0; i < n; i++) {
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m.copyKind = (i % 2 == 0) ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
        m.srcKind = (i % 2 == 0) ? ((i % 4 == 0) ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                                                 : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
                                 : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        m.dstKind = (i % 2 == 0) ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
                                 : CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
        m.bytes = (uint64_t)(i + 1) << 20;
        m.start = first_start + (uint64_t)i * 1000000ull;
        m.end = m.start + 500000ull;
        m.deviceId = i % 2 == 0 ? 0 : 1;
        m.contextId = 1;
        m.streamId = 13 + (i % 2);
        m.correlationId = 100 + i;
        add_copy(&m);
    }
    flush_batch(0);
    send_datagram(NULL, 0, GWCT_BYE, 0, 0);
    int delivered = (int)(g.copies_seen - g.dropped_send - delivered_before);
    pthread_mutex_unlock(&g.send_lock);
    return delivered;
}
