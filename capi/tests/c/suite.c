/*
 * suite.c: the C test suite of the cuckoo-sst C interface (issue 27, item 2).
 *
 *     suite DIR
 *
 * DIR holds the fixtures that the Rust driver, capi/tests/c_suite.rs, wrote with the Rust crate,
 * described by DIR/fixtures.txt (one directive a line, `#` starts a comment):
 *
 *     version V                     the library version cksst_version() must report
 *     single FILE KEYS ABSENT       a single-filter file holding the present keys 0 .. KEYS-1;
 *                                   FILE.absent holds Rust's answer (one byte, 0 or 1) for each
 *                                   absent key 0 .. ABSENT-1
 *     growable FILE KEYS ABSENT LEVELS LEN
 *                                   a growable filter (Rust's ScalableCuckooFilter) holding the
 *                                   present keys 0 .. KEYS-1 and the `hash` lines' key hashes,
 *                                   LEVELS levels and LEN entries; FILE.absent as above
 *     hash HEX                      a key hash the growable filter holds (keys crafted by hash
 *                                   to make it start new levels)
 *     embedded FILE INDEX OFFSET LEN
 *                                   the bytes of single filter INDEX (0-based, in the order of
 *                                   the `single` lines) sit at OFFSET of FILE, among other bytes
 *     grow INSERTS UNIQUE EVERY     what to do to the growable filter (section 3): insert keys
 *                                   c 0 .. INSERTS-1, insert_unique keys c INSERTS ..
 *                                   INSERTS+UNIQUE-1, remove the keys c i < INSERTS with
 *                                   i % EVERY == 0; the driver then checks c_growable.cksst
 *     runindex KEYS UPDATES EVERY   what to do to the run index (section 7): run 10 holds keys
 *                                   c 0 .. KEYS-1, run 11 keys c KEYS .. 2*KEYS-1 and the UPDATES
 *                                   keys c 0 .. UPDATES-1 again, run 12 c 2*KEYS .. 2.5*KEYS-1;
 *                                   11 and 10 are compacted into 13, which drops the keys c i
 *                                   with i % EVERY == 0; 12 compacted into 14, 14 dropped; run
 *                                   15 holds c 3*KEYS .. 3.5*KEYS-1. The index, describing runs
 *                                   15 and 13, is saved to c_run_index.cksst, which the driver
 *                                   checks (the same operations in Rust give the same bytes)
 *
 * Keys are 16 bytes: present key i is "p%015zu", absent key i "a%015zu", key i that this
 * suite inserts "c%015zu".
 *
 * The suite writes c_built.cksst (section 4), c_growable.cksst (section 3) and c_run_index.cksst
 * (section 7) into DIR, which the driver checks from Rust afterwards, and some scratch files.
 *
 * C99 and POSIX (open, close, threads), nothing but cuckoo_sst.h and libc. Every check is a CHECK*: on
 * failure it prints the file, line, expression, what was being checked and cksst_last_error(),
 * and exits with status 1. The driver builds it with -std=c99 -Wall -Wextra -Werror -pedantic
 * and, where the compiler has them, AddressSanitizer (leaks detected) and UBSan: everything the
 * suite allocates or is given by the library is freed.
 */
#define _POSIX_C_SOURCE 200809L

#include "cuckoo_sst.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Checks */

static unsigned long long checks;
static char context[512];
/* With CKSST_SUITE_KEEP_GOING set, a failed check is reported and counted, and the suite goes
 * on (to see every check a change fails, not the first); it still exits with status 1. */
static int keep_going;
static unsigned long long failed;

static void fail(const char *file, int line, const char *expr, const char *detail)
{
    const char *e = cksst_last_error();
    fflush(stdout);
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expr);
    if (detail != NULL && detail[0] != '\0') {
        fprintf(stderr, "  %s\n", detail);
    }
    if (context[0] != '\0') {
        fprintf(stderr, "  while checking: %s\n", context);
    }
    fprintf(stderr, "  cksst_last_error(): \"%s\"\n", e != NULL ? e : "(NULL)");
    fprintf(stderr, "  (%llu checks had passed)\n", checks);
    if (keep_going) {
        ++failed;
        return;
    }
    exit(1);
}

/* What is being checked, for the failure message. */
static void set_context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
}

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        ++checks;                                                                              \
        if (!(expr)) {                                                                         \
            fail(__FILE__, __LINE__, #expr, NULL);                                             \
        }                                                                                      \
    } while (0)

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

static void failf(const char *file, int line, const char *expr, const char *fmt, ...)
    PRINTF_LIKE(4, 5);

/* fail() with a printf-style detail. */
static void failf(const char *file, int line, const char *expr, const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    fail(file, line, expr, detail);
}

/* CHECK with a printf-style detail: CHECKF(x == 1, "key %zu", i). */
#define CHECKF(expr, ...)                                                                      \
    do {                                                                                       \
        ++checks;                                                                              \
        if (!(expr)) {                                                                         \
            failf(__FILE__, __LINE__, #expr, __VA_ARGS__);                                     \
        }                                                                                      \
    } while (0)

/* The call returns the code `want` (CKSST_OK, CKSST_ERR_*, or an answer 0 / 1). */
#define CHECK_RC(call, want)                                                                   \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        int want_ = (want);                                                                    \
        ++checks;                                                                              \
        if (rc_ != want_) {                                                                    \
            failf(__FILE__, __LINE__, #call, "returned %d (%s), expected %d (%s)", rc_,        \
                  cksst_status_name(rc_), want_, cksst_status_name(want_));                    \
        }                                                                                      \
    } while (0)

/* The call fails with the error `want` and leaves a message for cksst_last_error(). */
#define CHECK_ERR(call, want)                                                                  \
    do {                                                                                       \
        CHECK_RC(call, want);                                                                  \
        CHECK(cksst_last_error() != NULL && cksst_last_error()[0] != '\0');                    \
    } while (0)

/* The call fails, with an error code the header declares, never CKSST_ERR_INTERNAL (a panic
 * caught at the boundary) and never success or an answer. */
#define CHECK_FAILS(call)                                                                      \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        ++checks;                                                                              \
        if (!(rc_ < 0 && rc_ >= CKSST_ERR_NOT_DURABLE && rc_ != CKSST_ERR_INTERNAL)) {         \
            failf(__FILE__, __LINE__, #call, "returned %d (%s), expected an error", rc_,       \
                  cksst_status_name(rc_));                                                     \
        }                                                                                      \
        CHECK(cksst_last_error()[0] != '\0');                                                  \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Memory, files, keys */

static void *xmalloc(size_t n)
{
    void *p = malloc(n != 0 ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static const char *dir;

/* DIR/name into `out`. */
static void path_in(char *out, size_t cap, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    CHECKF(n > 0 && (size_t)n < cap, "path %s/%s too long", dir, name);
}

/* The whole file DIR/name, malloc'd, exactly its length (so that AddressSanitizer catches a
 * read past the end by this program). */
static uint8_t *read_file(const char *name, size_t *len)
{
    char path[4096];
    FILE *f;
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *buf = xmalloc(cap), *exact;
    path_in(path, sizeof path, name);
    f = fopen(path, "rb");
    CHECKF(f != NULL, "cannot open %s", path);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = xmalloc(cap * 2);
            memcpy(bigger, buf, n);
            free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    CHECKF(!ferror(f), "cannot read %s", path);
    fclose(f);
    exact = xmalloc(n);
    memcpy(exact, buf, n);
    free(buf);
    *len = n;
    return exact;
}

static void write_file(const char *name, const uint8_t *bytes, size_t len)
{
    char path[4096];
    FILE *f;
    path_in(path, sizeof path, name);
    f = fopen(path, "wb");
    CHECKF(f != NULL, "cannot create %s", path);
    CHECKF(fwrite(bytes, 1, len, f) == len, "cannot write %s", path);
    CHECKF(fclose(f) == 0, "cannot close %s", path);
}

/* `len` bytes copied into a buffer of their own, exactly that long (NULL for 0 bytes). */
static uint8_t *copy_of(const uint8_t *bytes, size_t len)
{
    uint8_t *c;
    if (len == 0) {
        return NULL;
    }
    c = xmalloc(len);
    memcpy(c, bytes, len);
    return c;
}

#define KEY_LEN 16

/* cksst_hash_checked of a key, which must succeed, and agree with cksst_hash. */
static uint64_t hash_of(const uint8_t *key, size_t len)
{
    uint64_t h = 0;
    CHECK_RC(cksst_hash_checked(key, len, &h), CKSST_OK);
    CHECK(h == cksst_hash(key, len));
    return h;
}

/* n keys "<prefix>%015zu", with what the batch functions take. */
typedef struct {
    size_t n;
    uint8_t *bytes;       /* n keys of KEY_LEN bytes, back to back */
    const uint8_t **ptrs; /* the address of each */
    size_t *lens;         /* KEY_LEN each */
    uint64_t *hashes;     /* cksst_hash of each */
} keyset;

static void keyset_make(keyset *ks, char prefix, size_t n)
{
    size_t i;
    ks->n = n;
    ks->bytes = xmalloc(n * KEY_LEN);
    ks->ptrs = xmalloc(n * sizeof *ks->ptrs);
    ks->lens = xmalloc(n * sizeof *ks->lens);
    ks->hashes = xmalloc(n * sizeof *ks->hashes);
    for (i = 0; i < n; i++) {
        char text[32];
        int w = snprintf(text, sizeof text, "%c%015zu", prefix, i);
        CHECK(w == KEY_LEN);
        memcpy(ks->bytes + i * KEY_LEN, text, KEY_LEN);
        ks->ptrs[i] = ks->bytes + i * KEY_LEN;
        ks->lens[i] = KEY_LEN;
        ks->hashes[i] = hash_of(ks->ptrs[i], KEY_LEN);
    }
}

static void keyset_free(keyset *ks)
{
    free(ks->bytes);
    free((void *)ks->ptrs);
    free(ks->lens);
    free(ks->hashes);
    memset(ks, 0, sizeof *ks);
}

static const uint8_t *key(const keyset *ks, size_t i)
{
    return ks->bytes + i * KEY_LEN;
}

/* ------------------------------------------------------------------------------------------ */
/* The fixtures */

#define MAX_FIXTURES 32

typedef struct {
    char file[128];
    size_t keys;      /* present keys 0 .. keys-1 */
    size_t absent;    /* absent keys 0 .. absent-1, answered in `answers` */
    uint8_t *bytes;   /* the file, malloc'd */
    size_t len;
    uint8_t *answers; /* Rust's answer for each absent key, 0 or 1 */
} fixture;

typedef struct {
    size_t index;
    unsigned long long offset, len;
} embedding;

static char version[32];
static fixture singles[MAX_FIXTURES];
static size_t n_singles;
static fixture growable;
static size_t growable_levels, growable_len;
static uint64_t crafted[256];
static size_t n_crafted;
static char embedded_file[128];
static embedding embedded[MAX_FIXTURES];
static size_t n_embedded;
static size_t grow_inserts, grow_unique, grow_every;
/* What the manifest's `runindex KEYS UPDATES EVERY` line says (section 7). */
static size_t ri_keys, ri_updates, ri_every;

/* Keys: present (the most any fixture holds), absent (the most any fixture answers), and the
 * suite's own inserts. */
static keyset pk, ak, ck;
/* Scratch answers, as long as the longest key set. */
static bool *out;

static void load_fixture(fixture *f)
{
    char name[160];
    size_t n;
    f->bytes = read_file(f->file, &f->len);
    snprintf(name, sizeof name, "%s.absent", f->file);
    f->answers = read_file(name, &n);
    CHECKF(n == f->absent, "%s: %zu answers, the manifest says %zu", name, n, f->absent);
    for (n = 0; n < f->absent; n++) {
        CHECKF(f->answers[n] <= 1, "%s: byte %zu is %u", name, n, f->answers[n]);
    }
}

static void read_manifest(void)
{
    char path[4096], line[1024];
    FILE *m;
    unsigned lineno = 0;
    size_t e;
    path_in(path, sizeof path, "fixtures.txt");
    m = fopen(path, "r");
    CHECKF(m != NULL, "cannot open %s", path);
    while (fgets(line, sizeof line, m) != NULL) {
        char word[32], text[128];
        unsigned long long a, b;
        size_t x, y, z;
        ++lineno;
        set_context("%s line %u: %s", path, lineno, line);
        if (line[0] == '#' || sscanf(line, "%31s", word) != 1) {
            continue;
        }
        if (strcmp(word, "version") == 0) {
            CHECK(sscanf(line, "version %31s", version) == 1);
        } else if (strcmp(word, "single") == 0) {
            fixture *f;
            CHECK(n_singles < MAX_FIXTURES);
            f = &singles[n_singles++];
            CHECK(sscanf(line, "single %127s %zu %zu", f->file, &f->keys, &f->absent) == 3);
        } else if (strcmp(word, "growable") == 0) {
            CHECK(sscanf(line, "growable %127s %zu %zu %zu %zu", growable.file, &growable.keys,
                         &growable.absent, &growable_levels, &growable_len) == 5);
        } else if (strcmp(word, "hash") == 0) {
            char *end;
            CHECK(n_crafted < sizeof crafted / sizeof crafted[0]);
            CHECK(sscanf(line, "hash %127s", text) == 1);
            crafted[n_crafted++] = strtoull(text, &end, 16);
            CHECK(*end == '\0');
        } else if (strcmp(word, "embedded") == 0) {
            CHECK(n_embedded < MAX_FIXTURES);
            CHECK(sscanf(line, "embedded %127s %zu %llu %llu", text, &x, &a, &b) == 4);
            strcpy(embedded_file, text);
            embedded[n_embedded].index = x;
            embedded[n_embedded].offset = a;
            embedded[n_embedded].len = b;
            ++n_embedded;
        } else if (strcmp(word, "runindex") == 0) {
            CHECK(sscanf(line, "runindex %zu %zu %zu", &x, &y, &z) == 3);
            ri_keys = x;
            ri_updates = y;
            ri_every = z;
        } else if (strcmp(word, "grow") == 0) {
            CHECK(sscanf(line, "grow %zu %zu %zu", &x, &y, &z) == 3);
            grow_inserts = x;
            grow_unique = y;
            grow_every = z;
            CHECK(grow_every > 0 && grow_inserts > 2);
        } else {
            CHECKF(0, "unknown directive %s", word);
        }
    }
    fclose(m);
    set_context("the manifest");
    CHECK(version[0] != '\0');
    CHECK(n_singles >= 2);
    CHECK(growable.file[0] != '\0');
    CHECK(n_embedded > 0 && embedded_file[0] != '\0');
    CHECK(grow_every > 0);
    CHECK(ri_keys > 0 && ri_every > 1);
    for (e = 0; e < n_embedded; e++) {
        CHECK(embedded[e].index < n_singles);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Asking a filter every key of a fixture */

/* The present keys 0 .. keys-1 all answer 1, and the absent keys 0 .. absent-1 answer as Rust
 * did (`answers`), through every lookup a view has. */
static void check_view(const cksst_view *v, size_t keys, size_t absent, const uint8_t *answers)
{
    size_t i;
    double fpr = cksst_view_expected_fpr(v);
    CHECKF(cksst_view_len(v) == keys, "len %zu, expected %zu", cksst_view_len(v), keys);
    CHECKF(fpr >= 0.0 && fpr <= 1.0, "expected_fpr %g", fpr);
    for (i = 0; i < keys; i++) {
        CHECKF(cksst_view_contains(v, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
        CHECKF(cksst_view_contains_hash(v, pk.hashes[i]) == 1, "present key %zu", i);
    }
    memset(out, 0, keys * sizeof *out);
    CHECK_RC(cksst_view_contains_batch(v, pk.hashes, keys, out), CKSST_OK);
    for (i = 0; i < keys; i++) {
        CHECKF(out[i], "present key %zu (batch)", i);
    }
    memset(out, 0, keys * sizeof *out);
    CHECK_RC(cksst_view_contains_keys(v, pk.ptrs, pk.lens, keys, out), CKSST_OK);
    for (i = 0; i < keys; i++) {
        CHECKF(out[i], "present key %zu (keys)", i);
    }
    for (i = 0; i < absent; i++) {
        CHECKF(cksst_view_contains(v, key(&ak, i), KEY_LEN) == answers[i], "absent key %zu", i);
        CHECKF(cksst_view_contains_hash(v, ak.hashes[i]) == answers[i], "absent key %zu", i);
    }
    /* Each answer the opposite of Rust's first, so that every one must be written. */
    for (i = 0; i < absent; i++) {
        out[i] = !answers[i];
    }
    CHECK_RC(cksst_view_contains_batch(v, ak.hashes, absent, out), CKSST_OK);
    for (i = 0; i < absent; i++) {
        CHECKF(out[i] == answers[i], "absent key %zu (batch)", i);
    }
    for (i = 0; i < absent; i++) {
        out[i] = !answers[i];
    }
    CHECK_RC(cksst_view_contains_keys(v, ak.ptrs, ak.lens, absent, out), CKSST_OK);
    for (i = 0; i < absent; i++) {
        CHECKF(out[i] == answers[i], "absent key %zu (keys)", i);
    }
}

/* The same through a mapped filter, which also holds the crafted key hashes `hashes` and has
 * `len` entries in `levels` levels. */
static void check_mapped(const cksst_mapped *m, size_t keys, const uint64_t *hashes,
                         size_t n_hashes, size_t len, size_t levels, size_t absent,
                         const uint8_t *answers)
{
    size_t i;
    CHECKF(cksst_mapped_len(m) == len, "len %zu, expected %zu", cksst_mapped_len(m), len);
    CHECKF(cksst_mapped_levels(m) == levels, "levels %zu, expected %zu", cksst_mapped_levels(m),
           levels);
    for (i = 0; i < keys; i++) {
        CHECKF(cksst_mapped_contains(m, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
        CHECKF(cksst_mapped_contains_hash(m, pk.hashes[i]) == 1, "present key %zu", i);
    }
    memset(out, 0, keys * sizeof *out);
    CHECK_RC(cksst_mapped_contains_batch(m, pk.hashes, keys, out), CKSST_OK);
    for (i = 0; i < keys; i++) {
        CHECKF(out[i], "present key %zu (batch)", i);
    }
    for (i = 0; i < n_hashes; i++) {
        CHECKF(cksst_mapped_contains_hash(m, hashes[i]) == 1, "crafted hash %zu", i);
    }
    for (i = 0; i < absent; i++) {
        CHECKF(cksst_mapped_contains(m, key(&ak, i), KEY_LEN) == answers[i], "absent key %zu",
               i);
        CHECKF(cksst_mapped_contains_hash(m, ak.hashes[i]) == answers[i], "absent key %zu", i);
    }
    for (i = 0; i < absent; i++) {
        out[i] = !answers[i];
    }
    CHECK_RC(cksst_mapped_contains_batch(m, ak.hashes, absent, out), CKSST_OK);
    for (i = 0; i < absent; i++) {
        CHECKF(out[i] == answers[i], "absent key %zu (batch)", i);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 0. Hashing, names, version */

static void section_basics(void)
{
    int code;
    set_context("hashing, status names, version");
    /* FORMAT.md §2's test vectors. */
    CHECK(hash_of((const uint8_t *)"", 0) == 0x2D06800538D394C2ULL);
    CHECK(hash_of(NULL, 0) == 0x2D06800538D394C2ULL);
    CHECK(hash_of((const uint8_t *)"a", 1) == 0xE6C632B61E964E1FULL);
    CHECK(hash_of((const uint8_t *)"abc", 3) == 0x78AF5F94892F3950ULL);
    /* A NULL key with a length: cksst_hash_checked refuses it, as add_key and contains do
     * (issue 40, finding 10), and leaves the output alone; cksst_hash, which has no error
     * to give, hashes it as the empty key, as documented. */
    {
        uint64_t h = 7;
        CHECK_ERR(cksst_hash_checked(NULL, 5, &h), CKSST_ERR_INVALID_ARGUMENT);
        CHECK(h == 7);
        CHECK_ERR(cksst_hash_checked((const uint8_t *)"a", 1, NULL), CKSST_ERR_INVALID_ARGUMENT);
        CHECK(cksst_hash(NULL, 5) == 0x2D06800538D394C2ULL);
    }
    CHECK(strcmp(cksst_version(), version) == 0);
    /* The lowest code is the newest, CKSST_ERR_NOT_DURABLE. */
    for (code = CKSST_ERR_NOT_DURABLE - 3; code <= 3; code++) {
        const char *name = cksst_status_name(code);
        int other;
        CHECKF(name != NULL && strncmp(name, "CKSST_", 6) == 0, "code %d", code);
        if (code < CKSST_ERR_NOT_DURABLE || code > CKSST_OK) {
            CHECKF(strcmp(name, "CKSST_UNKNOWN") == 0, "code %d: %s", code, name);
            continue;
        }
        CHECKF(strcmp(name, "CKSST_UNKNOWN") != 0, "code %d", code);
        CHECKF(code == CKSST_OK || strncmp(name, "CKSST_ERR_", 10) == 0, "code %d: %s", code,
               name);
        for (other = CKSST_ERR_NOT_DURABLE; other < code; other++) {
            CHECKF(strcmp(name, cksst_status_name(other)) != 0, "codes %d and %d: %s", code,
                   other, name);
        }
    }
    CHECK(strcmp(cksst_status_name(CKSST_OK), "CKSST_OK") == 0);
    CHECK(strcmp(cksst_status_name(CKSST_ERR_CORRUPT), "CKSST_ERR_CORRUPT") == 0);
    CHECK(strcmp(cksst_status_name(CKSST_ERR_CHECKSUM_MISMATCH), "CKSST_ERR_CHECKSUM_MISMATCH") ==
          0);
    CHECK(strcmp(cksst_status_name(CKSST_ERR_INTERNAL), "CKSST_ERR_INTERNAL") == 0);
}

/* Another thread's last error: its own, untouched by the first thread's and not touching it. */
static void *other_thread(void *unused)
{
    static int ok;
    (void)unused;
    ok = cksst_last_error()[0] == '\0' &&
         cksst_config_init(NULL, 0) == CKSST_ERR_INVALID_ARGUMENT &&
         strstr(cksst_last_error(), "config") != NULL;
    return &ok;
}

static void section_threads(void)
{
    pthread_t t;
    void *ok = NULL;
    cksst_config cfg;
    set_context("the last error, per thread");
    CHECK_ERR(cksst_view_contains(NULL, NULL, 0), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cksst_last_error(), "view") != NULL);
    CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
    CHECK(pthread_join(t, &ok) == 0);
    CHECK(ok != NULL && *(int *)ok == 1);
    CHECK(strstr(cksst_last_error(), "view") != NULL);
    /* A successful call leaves the message as it was. */
    CHECK_RC(cksst_config_init(&cfg, 0), CKSST_OK);
    CHECK(strstr(cksst_last_error(), "view") != NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* 1. Single filters: views of the bytes at any address, mapped files, ranges of a file */

static void section_singles(void)
{
    size_t k, e;
    const size_t offsets[] = {1, 37};
    char path[4096];
    int fd;
    cksst_mapped *kept = NULL;
    const fixture *kept_f = NULL;

    for (k = 0; k < n_singles; k++) {
        const fixture *f = &singles[k];
        cksst_view *v = NULL;
        cksst_mapped *m = NULL;
        size_t o;

        set_context("%s (%zu keys): cksst_view_open of the bytes as read", f->file, f->keys);
        CHECK_RC(cksst_view_open(f->bytes, f->len, &v), CKSST_OK);
        CHECK(v != NULL);
        check_view(v, f->keys, f->absent, f->answers);
        cksst_view_free(v);

        set_context("%s (%zu keys): cksst_view_open_trusted", f->file, f->keys);
        v = NULL;
        CHECK_RC(cksst_view_open_trusted(f->bytes, f->len, &v), CKSST_OK);
        check_view(v, f->keys, f->absent, f->answers);
        cksst_view_free(v);

        /* Copies at odd addresses: a checked view of one, a trusted view of the other. */
        for (o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
            uint8_t *buf = xmalloc(offsets[o] + f->len);
            memcpy(buf + offsets[o], f->bytes, f->len);
            set_context("%s (%zu keys): %s of a copy at address %p (offset %zu)", f->file,
                        f->keys, o == 0 ? "cksst_view_open" : "cksst_view_open_trusted",
                        (void *)(buf + offsets[o]), offsets[o]);
            v = NULL;
            if (o == 0) {
                CHECK_RC(cksst_view_open(buf + offsets[o], f->len, &v), CKSST_OK);
            } else {
                CHECK_RC(cksst_view_open_trusted(buf + offsets[o], f->len, &v), CKSST_OK);
            }
            check_view(v, f->keys, f->absent, f->answers);
            cksst_view_free(v);
            free(buf);
        }

        path_in(path, sizeof path, f->file);
        set_context("%s (%zu keys): cksst_mapped_open", f->file, f->keys);
        CHECK_RC(cksst_mapped_open(path, &m), CKSST_OK);
        check_mapped(m, f->keys, NULL, 0, f->keys, 1, f->absent, f->answers);
        CHECK_RC(cksst_mapped_verify(m), CKSST_OK);
        cksst_mapped_free(m);

        set_context("%s (%zu keys): cksst_mapped_open_lazy", f->file, f->keys);
        m = NULL;
        CHECK_RC(cksst_mapped_open_lazy(path, &m), CKSST_OK);
        check_mapped(m, f->keys, NULL, 0, f->keys, 1, f->absent, f->answers);
        CHECK_RC(cksst_mapped_verify(m), CKSST_OK);
        CHECK_RC(cksst_mapped_verify(m), CKSST_OK);
        cksst_mapped_free(m);
    }

    /* Filters inside another file, at offsets that are not page-aligned. */
    path_in(path, sizeof path, embedded_file);
    fd = open(path, O_RDONLY);
    CHECKF(fd >= 0, "cannot open %s", path);
    for (e = 0; e < n_embedded; e++) {
        const embedding *at = &embedded[e];
        const fixture *f = &singles[at->index];
        cksst_mapped *m = NULL;
        set_context("%s bytes %llu .. +%llu (%s): cksst_mapped_open_range", embedded_file,
                    at->offset, at->len, f->file);
        CHECK(at->len == f->len);
        CHECK_RC(cksst_mapped_open_range(fd, at->offset, at->len, 0, &m), CKSST_OK);
        check_mapped(m, f->keys, NULL, 0, f->keys, 1, f->absent, f->answers);
        cksst_mapped_free(m);

        set_context("%s bytes %llu .. +%llu (%s): cksst_mapped_open_range, lazy", embedded_file,
                    at->offset, at->len, f->file);
        m = NULL;
        CHECK_RC(cksst_mapped_open_range(fd, at->offset, at->len, 1, &m), CKSST_OK);
        check_mapped(m, f->keys, NULL, 0, f->keys, 1, f->absent, f->answers);
        CHECK_RC(cksst_mapped_verify(m), CKSST_OK);
        cksst_mapped_free(m);

        /* The wrong range: a byte off, a byte short, a byte long, past the end. */
        m = NULL;
        CHECK_FAILS(cksst_mapped_open_range(fd, at->offset + 1, at->len, 0, &m));
        CHECK_FAILS(cksst_mapped_open_range(fd, at->offset, at->len - 1, 0, &m));
        CHECK_FAILS(cksst_mapped_open_range(fd, at->offset, at->len + 1, 0, &m));
        CHECK_FAILS(cksst_mapped_open_range(fd, at->offset, at->len - 1, 1, &m));
        CHECK_FAILS(cksst_mapped_open_range(fd, at->offset, 1ULL << 40, 0, &m));
        CHECK(m == NULL);

        if (kept == NULL) {
            CHECK_RC(cksst_mapped_open_range(fd, at->offset, at->len, 1, &kept), CKSST_OK);
            kept_f = f;
        }
    }
    /* The descriptor stays the caller's: a mapping outlives its closing. */
    CHECK(close(fd) == 0);
    set_context("a range of %s mapped before its descriptor was closed", embedded_file);
    check_mapped(kept, kept_f->keys, NULL, 0, kept_f->keys, 1, kept_f->absent, kept_f->answers);
    CHECK_RC(cksst_mapped_verify(kept), CKSST_OK);
    cksst_mapped_free(kept);
}

/* ------------------------------------------------------------------------------------------ */
/* 2. A set of every single filter's view, in fixture order */

static void section_set(void)
{
    cksst_view *views[MAX_FIXTURES], *spare[MAX_FIXTURES];
    cksst_view_set *set = NULL, *set2 = NULL, *empty = NULL;
    bool each[MAX_FIXTURES], each2[MAX_FIXTURES];
    size_t k, i, max_keys = 0, min_absent = (size_t)-1;

    set_context("cksst_view_set of the %zu single filters", n_singles);
    for (k = 0; k < n_singles; k++) {
        views[k] = spare[k] = NULL;
        CHECK_RC(cksst_view_open(singles[k].bytes, singles[k].len, &views[k]), CKSST_OK);
        CHECK_RC(cksst_view_open_trusted(singles[k].bytes, singles[k].len, &spare[k]), CKSST_OK);
        if (singles[k].keys > max_keys) {
            max_keys = singles[k].keys;
        }
        if (singles[k].absent < min_absent) {
            min_absent = singles[k].absent;
        }
    }
    CHECK_RC(cksst_view_set_new((const cksst_view *const *)views, n_singles, &set), CKSST_OK);
    /* The views of a set may be freed once it is made: the set keeps only their bytes. */
    CHECK_RC(cksst_view_set_new((const cksst_view *const *)spare, n_singles, &set2), CKSST_OK);
    for (k = 0; k < n_singles; k++) {
        cksst_view_free(spare[k]);
    }

    /* Present key i: its first fixture is the first k holding it (keys[k] > i); the set's
     * answer is a fixture no later, the first whose view answers 1. */
    for (i = 0; i < max_keys; i++) {
        size_t first = n_singles, answered = n_singles, index = (size_t)-1, index2 = (size_t)-1;
        for (k = 0; k < n_singles; k++) {
            int a = cksst_view_contains_hash(views[k], pk.hashes[i]);
            CHECK(a == 0 || a == 1);
            if (first == n_singles && singles[k].keys > i) {
                first = k;
            }
            if (answered == n_singles && a == 1) {
                answered = k;
            }
            each[k] = (a == 1);
        }
        CHECKF(cksst_view_set_first_containing(set, pk.hashes[i], &index) == 1,
               "present key %zu", i);
        CHECKF(index <= first && index == answered,
               "present key %zu: index %zu, first fixture holding it %zu, first answering %zu",
               i, index, first, answered);
        CHECKF(cksst_view_set_first_containing(set2, pk.hashes[i], &index2) == 1 &&
                   index2 == index,
               "present key %zu", i);
        memset(each2, 0, sizeof each2);
        CHECK_RC(cksst_view_set_contains_each(set, pk.hashes[i], each2, n_singles), CKSST_OK);
        CHECKF(memcmp(each, each2, n_singles * sizeof each[0]) == 0, "present key %zu", i);
        memset(each2, 0, sizeof each2);
        CHECK_RC(cksst_view_set_contains_each(set2, pk.hashes[i], each2, n_singles), CKSST_OK);
        CHECKF(memcmp(each, each2, n_singles * sizeof each[0]) == 0, "present key %zu", i);
    }
    /* Absent key i: the first fixture whose Rust answer is 1, or none. */
    for (i = 0; i < min_absent; i++) {
        size_t first = n_singles, index = (size_t)-1;
        int r;
        for (k = 0; k < n_singles; k++) {
            if (first == n_singles && singles[k].answers[i]) {
                first = k;
            }
            each[k] = singles[k].answers[i] != 0;
        }
        r = cksst_view_set_first_containing(set, ak.hashes[i], &index);
        if (first == n_singles) {
            CHECKF(r == 0, "absent key %zu: %d (index %zu)", i, r, index);
        } else {
            CHECKF(r == 1 && index == first, "absent key %zu: %d, index %zu, expected %zu", i, r,
                   index, first);
        }
        CHECK_RC(cksst_view_set_first_containing(set2, ak.hashes[i], &index), r);
        memset(each2, 1, sizeof each2);
        CHECK_RC(cksst_view_set_contains_each(set, ak.hashes[i], each2, n_singles), CKSST_OK);
        CHECKF(memcmp(each, each2, n_singles * sizeof each[0]) == 0, "absent key %zu", i);
        memset(each2, 1, sizeof each2);
        CHECK_RC(cksst_view_set_contains_each(set2, ak.hashes[i], each2, n_singles), CKSST_OK);
        CHECKF(memcmp(each, each2, n_singles * sizeof each[0]) == 0, "absent key %zu", i);
    }

    /* The wrong length for `out`; an empty set. */
    CHECK_ERR(cksst_view_set_contains_each(set, pk.hashes[0], each, n_singles - 1),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_set_contains_each(set, pk.hashes[0], each2, n_singles + 1),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_view_set_new(NULL, 0, &empty), CKSST_OK);
    CHECK(empty != NULL);
    {
        size_t index = 12345;
        CHECK_RC(cksst_view_set_first_containing(empty, pk.hashes[0], &index), 0);
        CHECK(index == 12345);
        CHECK_RC(cksst_view_set_contains_each(empty, pk.hashes[0], NULL, 0), CKSST_OK);
    }
    cksst_view_set_free(empty);
    cksst_view_set_free(set2);
    cksst_view_set_free(set);
    for (k = 0; k < n_singles; k++) {
        cksst_view_free(views[k]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* 3. The growable filter */

static void check_growable(const cksst_growable *g, size_t keys, size_t len, size_t levels,
                           size_t absent, const uint8_t *answers)
{
    size_t i;
    CHECKF(cksst_growable_len(g) == len, "len %zu, expected %zu", cksst_growable_len(g), len);
    CHECKF(cksst_growable_levels(g) == levels, "levels %zu, expected %zu",
           cksst_growable_levels(g), levels);
    for (i = 0; i < keys; i++) {
        CHECKF(cksst_growable_contains(g, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
        CHECKF(cksst_growable_contains_hash(g, pk.hashes[i]) == 1, "present key %zu", i);
    }
    for (i = 0; i < n_crafted; i++) {
        CHECKF(cksst_growable_contains_hash(g, crafted[i]) == 1, "crafted hash %zu", i);
    }
    for (i = 0; i < absent; i++) {
        CHECKF(cksst_growable_contains(g, key(&ak, i), KEY_LEN) == answers[i], "absent key %zu",
               i);
        CHECKF(cksst_growable_contains_hash(g, ak.hashes[i]) == answers[i], "absent key %zu", i);
    }
}

/* Whether the suite removed key c i (or tried to) in section 3. */
static int removed(size_t i)
{
    return i < grow_inserts && i % grow_every == 0;
}

/* Everything section 3 put in `g` is there: the fixture's keys and hashes, and every key c the
 * suite inserted and did not remove. */
static void check_grown(const cksst_growable *g, const cksst_mapped *m)
{
    size_t i;
    for (i = 0; i < growable.keys; i++) {
        if (g != NULL) {
            CHECKF(cksst_growable_contains(g, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
        }
        if (m != NULL) {
            CHECKF(cksst_mapped_contains(m, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
        }
    }
    for (i = 0; i < n_crafted; i++) {
        CHECKF(g == NULL || cksst_growable_contains_hash(g, crafted[i]) == 1, "crafted %zu", i);
        CHECKF(m == NULL || cksst_mapped_contains_hash(m, crafted[i]) == 1, "crafted %zu", i);
    }
    for (i = 0; i < grow_inserts + grow_unique; i++) {
        if (removed(i)) {
            continue;
        }
        if (g != NULL) {
            CHECKF(cksst_growable_contains(g, key(&ck, i), KEY_LEN) == 1, "inserted key %zu", i);
            CHECKF(cksst_growable_contains_hash(g, ck.hashes[i]) == 1, "inserted key %zu", i);
        }
        if (m != NULL) {
            CHECKF(cksst_mapped_contains(m, key(&ck, i), KEY_LEN) == 1, "inserted key %zu", i);
        }
    }
}

static void section_growable(void)
{
    char path[4096], saved[4096], single0[4096];
    cksst_growable *g = NULL, *g2 = NULL, *back = NULL, *fresh = NULL;
    cksst_mapped *m = NULL;
    cksst_view *v = NULL;
    uint8_t *copy, *bytes = NULL, *file;
    size_t i, len, n, file_len, inserted_unique = 0, removed_ok = 0, tried = 0, levels;
    cksst_config cfg;
    uint8_t *answers_after;
    int r;

    path_in(path, sizeof path, growable.file);
    path_in(saved, sizeof saved, "c_growable.cksst");
    path_in(single0, sizeof single0, singles[0].file);

    set_context("%s: cksst_growable_open", growable.file);
    CHECK(growable_levels > 1);
    CHECK_RC(cksst_growable_open(path, &g), CKSST_OK);
    check_growable(g, growable.keys, growable_len, growable_levels, growable.absent,
                   growable.answers);

    set_context("%s: cksst_growable_from_bytes", growable.file);
    /* The bytes are copied: the buffer is gone before the first lookup. */
    copy = copy_of(growable.bytes, growable.len);
    CHECK_RC(cksst_growable_from_bytes(copy, growable.len, &g2), CKSST_OK);
    free(copy);
    check_growable(g2, growable.keys, growable_len, growable_levels, growable.absent,
                   growable.answers);

    set_context("%s: cksst_mapped_open", growable.file);
    CHECK_RC(cksst_mapped_open(path, &m), CKSST_OK);
    check_mapped(m, growable.keys, crafted, n_crafted, growable_len, growable_levels,
                 growable.absent, growable.answers);
    cksst_mapped_free(m);
    set_context("%s: cksst_mapped_open_lazy", growable.file);
    m = NULL;
    CHECK_RC(cksst_mapped_open_lazy(path, &m), CKSST_OK);
    check_mapped(m, growable.keys, crafted, n_crafted, growable_len, growable_levels,
                 growable.absent, growable.answers);
    CHECK_RC(cksst_mapped_verify(m), CKSST_OK);
    cksst_mapped_free(m);

    set_context("%s: opened as what it is not", growable.file);
    CHECK_ERR(cksst_view_open(growable.bytes, growable.len, &v), CKSST_ERR_GROWABLE);
    CHECK_ERR(cksst_view_open_trusted(growable.bytes, growable.len, &v), CKSST_ERR_GROWABLE);
    CHECK(v == NULL);
    CHECK_ERR(cksst_growable_open(single0, &back), CKSST_ERR_NOT_GROWABLE);
    CHECK_ERR(cksst_growable_from_bytes(singles[0].bytes, singles[0].len, &back),
              CKSST_ERR_NOT_GROWABLE);
    CHECK(back == NULL);

    /* Inserts, a set's inserts, removals. */
    set_context("%s: inserting %zu keys", growable.file, grow_inserts);
    for (i = 0; i < grow_inserts; i++) {
        CHECK_RC(cksst_growable_insert(g, key(&ck, i), KEY_LEN), CKSST_OK);
    }
    len = growable_len + grow_inserts;
    CHECK(cksst_growable_len(g) == len);
    CHECK(cksst_growable_levels(g) >= growable_levels);
    /* A key it holds is not inserted again. */
    CHECK_RC(cksst_growable_insert_unique(g, key(&ck, 0), KEY_LEN), 0);
    CHECK_RC(cksst_growable_insert_unique(g, key(&ck, grow_inserts - 1), KEY_LEN), 0);
    CHECK_RC(cksst_growable_insert_unique(g, key(&pk, 0), KEY_LEN), 0);
    CHECK(cksst_growable_len(g) == len);
    for (i = grow_inserts; i < grow_inserts + grow_unique; i++) {
        r = cksst_growable_insert_unique(g, key(&ck, i), KEY_LEN);
        CHECKF(r == 0 || r == 1, "key %zu: %d", i, r);
        inserted_unique += (size_t)r;
        /* 0 only for a key it answered "maybe" for already: a false positive. */
        CHECKF(cksst_growable_contains(g, key(&ck, i), KEY_LEN) == 1, "key %zu", i);
    }
    len += inserted_unique;
    CHECK(cksst_growable_len(g) == len);
    /* At most a few false positives (the filter's rate is 1 %). */
    CHECKF(inserted_unique * 10 >= grow_unique * 9, "%zu of %zu inserted", inserted_unique,
           grow_unique);
    set_context("%s: removing every %zu-th inserted key", growable.file, grow_every);
    for (i = 0; i < grow_inserts; i++) {
        if (!removed(i)) {
            continue;
        }
        r = cksst_growable_remove(g, key(&ck, i), KEY_LEN);
        /* 0 when more than one level answers for the key: the chain cannot tell which entry
         * is its, so it removes none (about the filter's false-positive rate). */
        CHECKF(r == 0 || r == 1, "key %zu: %d", i, r);
        removed_ok += (size_t)r;
        ++tried;
    }
    CHECKF(removed_ok * 10 >= tried * 9, "%zu of %zu removed", removed_ok, tried);
    len -= removed_ok;
    CHECK(cksst_growable_len(g) == len);
    check_grown(g, NULL);
    levels = cksst_growable_levels(g);

    set_context("%s: saved to c_growable.cksst and read back", growable.file);
    CHECK_RC(cksst_growable_save(g, saved), CKSST_OK);
    CHECK_RC(cksst_growable_open(saved, &back), CKSST_OK);
    CHECK(cksst_growable_len(back) == len);
    CHECK(cksst_growable_levels(back) == levels);
    m = NULL;
    CHECK_RC(cksst_mapped_open(saved, &m), CKSST_OK);
    CHECK(cksst_mapped_len(m) == len);
    CHECK(cksst_mapped_levels(m) == levels);
    check_grown(back, m);
    /* The absent keys answer alike in memory, read back, and mapped. */
    answers_after = xmalloc(growable.absent);
    for (i = 0; i < growable.absent; i++) {
        r = cksst_growable_contains(g, key(&ak, i), KEY_LEN);
        CHECK(r == 0 || r == 1);
        answers_after[i] = (uint8_t)r;
        /* Every key that answered "maybe" before still does. */
        CHECKF(!growable.answers[i] || r == 1, "absent key %zu", i);
    }
    check_mapped(m, 0, NULL, 0, len, levels, growable.absent, answers_after);
    check_growable(back, 0, len, levels, growable.absent, answers_after);
    /* The file is the filter's bytes. */
    CHECK_RC(cksst_growable_to_bytes(g, &bytes, &n), CKSST_OK);
    file = read_file("c_growable.cksst", &file_len);
    CHECK(n == file_len && memcmp(bytes, file, n) == 0);
    free(file);
    cksst_bytes_free(bytes, n);
    free(answers_after);
    cksst_mapped_free(m);
    cksst_growable_free(back);
    back = NULL;
    /* The filter read from bytes was not changed by the other's inserts. */
    set_context("%s: the copy from bytes, after the other changed", growable.file);
    check_growable(g2, growable.keys, growable_len, growable_levels, 0, NULL);
    cksst_growable_free(g2);
    cksst_growable_free(g);

    /* A new filter: one key in, found, out, gone. */
    set_context("a new growable filter");
    CHECK_RC(cksst_config_init(&cfg, 100), CKSST_OK);
    CHECK_RC(cksst_growable_new(&cfg, &fresh), CKSST_OK);
    CHECK(cksst_growable_len(fresh) == 0 && cksst_growable_levels(fresh) == 1);
    CHECK_RC(cksst_growable_contains(fresh, key(&ck, 0), KEY_LEN), 0);
    CHECK_RC(cksst_growable_insert(fresh, key(&ck, 0), KEY_LEN), CKSST_OK);
    CHECK_RC(cksst_growable_contains(fresh, key(&ck, 0), KEY_LEN), 1);
    CHECK_RC(cksst_growable_contains_hash(fresh, ck.hashes[0]), 1);
    CHECK(cksst_growable_len(fresh) == 1);
    CHECK_RC(cksst_growable_remove(fresh, key(&ck, 0), KEY_LEN), 1);
    CHECK_RC(cksst_growable_contains(fresh, key(&ck, 0), KEY_LEN), 0);
    CHECK_RC(cksst_growable_remove(fresh, key(&ck, 0), KEY_LEN), 0);
    CHECK(cksst_growable_len(fresh) == 0);
    /* The empty key (NULL with length 0), twice: a multiset. */
    CHECK_RC(cksst_growable_insert(fresh, NULL, 0), CKSST_OK);
    CHECK_RC(cksst_growable_insert(fresh, (const uint8_t *)"", 0), CKSST_OK);
    CHECK(cksst_growable_len(fresh) == 2);
    CHECK_RC(cksst_growable_contains(fresh, NULL, 0), 1);
    CHECK_RC(cksst_growable_remove(fresh, NULL, 0), 1);
    CHECK_RC(cksst_growable_contains(fresh, NULL, 0), 1);
    CHECK_RC(cksst_growable_remove(fresh, NULL, 0), 1);
    CHECK_RC(cksst_growable_contains(fresh, NULL, 0), 0);
    /* Copies of one key: as many as its two buckets hold, then refused, nothing changed. */
    for (i = 0; i < 64; i++) {
        r = cksst_growable_insert(fresh, key(&ck, 1), KEY_LEN);
        if (r != CKSST_OK) {
            break;
        }
    }
    CHECKF(i >= 2 && i < 64, "%zu copies", i);
    CHECK_RC(r, CKSST_ERR_TOO_MANY_COPIES);
    CHECK(cksst_growable_len(fresh) == i);
    CHECK_RC(cksst_growable_contains(fresh, key(&ck, 1), KEY_LEN), 1);
    /* To bytes and back. */
    CHECK_RC(cksst_growable_to_bytes(fresh, &bytes, &n), CKSST_OK);
    CHECK_RC(cksst_growable_from_bytes(bytes, n, &back), CKSST_OK);
    cksst_bytes_free(bytes, n);
    CHECK(cksst_growable_len(back) == i);
    CHECK_RC(cksst_growable_contains(back, key(&ck, 1), KEY_LEN), 1);
    cksst_growable_free(back);
    back = NULL;
    cksst_growable_free(fresh);
    fresh = NULL;

    /* NULL config: the defaults. */
    CHECK_RC(cksst_growable_new(NULL, &fresh), CKSST_OK);
    CHECK_RC(cksst_growable_insert(fresh, key(&ck, 2), KEY_LEN), CKSST_OK);
    CHECK_RC(cksst_growable_contains(fresh, key(&ck, 2), KEY_LEN), 1);
    cksst_growable_free(fresh);
    fresh = NULL;

    /* A size limit: inserts until CKSST_ERR_FULL, which changes nothing. */
    set_context("a growable filter of at most 4096 bytes");
    CHECK_RC(cksst_config_init(&cfg, 100), CKSST_OK);
    cfg.max_bytes = 4096;
    CHECK_RC(cksst_growable_new(&cfg, &fresh), CKSST_OK);
    for (i = 0; i < ck.n; i++) {
        r = cksst_growable_insert(fresh, key(&ck, i), KEY_LEN);
        if (r != CKSST_OK) {
            break;
        }
    }
    CHECKF(i >= 100 && i < ck.n, "%zu keys", i);
    CHECK_ERR(r, CKSST_ERR_FULL);
    CHECK(cksst_growable_len(fresh) == i);
    CHECK_ERR(cksst_growable_insert(fresh, key(&ck, i), KEY_LEN), CKSST_ERR_FULL);
    CHECK(cksst_growable_len(fresh) == i);
    for (n = 0; n < i; n++) {
        CHECKF(cksst_growable_contains(fresh, key(&ck, n), KEY_LEN) == 1, "key %zu", n);
    }
    CHECK_RC(cksst_growable_to_bytes(fresh, &bytes, &n), CKSST_OK);
    CHECK(n <= 4096);
    cksst_bytes_free(bytes, n);
    cksst_growable_free(fresh);
}

/* ------------------------------------------------------------------------------------------ */
/* 4. Building */

static void section_builder(void)
{
    const fixture *f0 = &singles[0];
    cksst_config cfg;
    cksst_builder *b, *b2;
    uint8_t *bytes = NULL, *bytes2 = NULL, *buf, *block = NULL;
    size_t len = 0, len2 = 0, need = 0, n = 0, i, compact_keys = 0;
    cksst_view *v = NULL;

    set_context("cksst_config_init");
    memset(&cfg, 0xA5, sizeof cfg);
    CHECK_RC(cksst_config_init(&cfg, 0), CKSST_OK);
    CHECK(cfg.capacity == 0);
    CHECK(cfg.false_positive_rate == 0.01);
    CHECK(cfg.bucket_size == 0 && cfg.fingerprint_bits == 0);
    CHECK(cfg.encoding == CKSST_ENCODING_AUTO);
    CHECK(cfg.max_kicks == 500);
    CHECK(cfg.growth_factor == 2.0 && cfg.tightening == 0.2);
    CHECK(cfg.max_levels == 0 && cfg.max_bytes == 0);
    CHECK(cfg.size == sizeof cfg);

    /* The keys of fixture 0, with the configuration it was built with (Config::new(0)
     * .false_positive_rate(0.01)): the same bytes. */
    set_context("building %s's keys with cksst_builder_finish", f0->file);
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    CHECK(cksst_builder_len(b) == 0);
    for (i = 0; i < f0->keys; i++) {
        CHECK_RC(cksst_builder_add_key(b, key(&pk, i), KEY_LEN), CKSST_OK);
    }
    /* A duplicate (another version of a key): counted here, dropped when finishing. */
    if (f0->keys > 0) {
        CHECK_RC(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_OK);
        CHECK(cksst_builder_len(b) == f0->keys + 1);
    }
    CHECK_RC(cksst_builder_finish(b, &bytes, &len), CKSST_OK);
    CHECK(bytes != NULL && len > 0);
    CHECK(cksst_builder_len(b) == 0);
    CHECKF(len == f0->len && memcmp(bytes, f0->bytes, len) == 0,
           "built %zu bytes, %s has %zu: not the same bytes", len, f0->file, f0->len);
    write_file("c_built.cksst", bytes, len);
    CHECK_RC(cksst_view_open(bytes, len, &v), CKSST_OK);
    check_view(v, f0->keys, f0->absent, f0->answers);
    cksst_view_free(v);
    /* Finished: only freeing is left. */
    CHECK_ERR(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_ERR_FINISHED);
    CHECK_ERR(cksst_builder_add_hash(b, pk.hashes[0]), CKSST_ERR_FINISHED);
    CHECK_ERR(cksst_builder_finish(b, &bytes2, &len2), CKSST_ERR_FINISHED);
    CHECK_ERR(cksst_builder_finish_into(b, NULL, 0, &len2), CKSST_ERR_FINISHED);
    CHECK(bytes2 == NULL);
    cksst_builder_free(b);

    /* Again, half the keys by hash, finished into the caller's buffer. */
    set_context("building %s's keys with cksst_builder_finish_into", f0->file);
    b2 = cksst_builder_new(&cfg);
    CHECK(b2 != NULL);
    for (i = 0; i < f0->keys; i++) {
        if (i % 2 == 0) {
            CHECK_RC(cksst_builder_add_key(b2, key(&pk, i), KEY_LEN), CKSST_OK);
        } else {
            CHECK_RC(cksst_builder_add_hash(b2, pk.hashes[i]), CKSST_OK);
        }
    }
    CHECK(cksst_builder_len(b2) == f0->keys);
    CHECK_ERR(cksst_builder_finish_into(b2, NULL, 0, &need), CKSST_ERR_BUFFER_TOO_SMALL);
    CHECK(need == len);
    /* Too small by one byte: the length again, and the filter kept. */
    buf = xmalloc(need + 1);
    n = 0;
    CHECK_ERR(cksst_builder_finish_into(b2, buf, need - 1, &n), CKSST_ERR_BUFFER_TOO_SMALL);
    CHECK(n == need);
    n = 0;
    CHECK_RC(cksst_builder_finish_into(b2, buf, need, &n), CKSST_OK);
    CHECK(n == need && memcmp(buf, bytes, n) == 0);
    /* Any alignment, and a larger buffer than needed. */
    memset(buf, 0, need + 1);
    n = 0;
    CHECK_RC(cksst_builder_finish_into(b2, buf + 1, need, &n), CKSST_OK);
    CHECK(n == need && memcmp(buf + 1, bytes, n) == 0);
    n = 0;
    CHECK_RC(cksst_builder_finish_into(b2, buf, need + 1, &n), CKSST_OK);
    CHECK(n == need && memcmp(buf, bytes, n) == 0);
    CHECK_ERR(cksst_builder_add_key(b2, key(&pk, 0), KEY_LEN), CKSST_ERR_FINISHED);
    CHECK_ERR(cksst_builder_finish_compact(b2, &bytes2, &len2), CKSST_ERR_FINISHED);
    /* The bytes kept for finish_into can still be taken. */
    CHECK_RC(cksst_builder_finish(b2, &bytes2, &len2), CKSST_OK);
    CHECK(len2 == len && memcmp(bytes2, bytes, len) == 0);
    cksst_bytes_free(bytes2, len2);
    bytes2 = NULL;
    CHECK_ERR(cksst_builder_finish_into(b2, buf, need, &n), CKSST_ERR_FINISHED);
    cksst_builder_free(b2);
    free(buf);
    cksst_bytes_free(bytes, len);

    /* NULL config: the defaults, the same bytes. */
    set_context("a builder with a NULL config");
    b = cksst_builder_new(NULL);
    CHECK(b != NULL);
    for (i = 0; i < f0->keys; i++) {
        CHECK_RC(cksst_builder_add_hash(b, pk.hashes[i]), CKSST_OK);
    }
    CHECK_RC(cksst_builder_finish(b, &bytes, &len), CKSST_OK);
    CHECK(len == f0->len && memcmp(bytes, f0->bytes, len) == 0);
    cksst_bytes_free(bytes, len);
    cksst_builder_free(b);

    /* No key at all, and the empty key. */
    b = cksst_builder_new(&cfg);
    CHECK_RC(cksst_builder_finish(b, &bytes, &len), CKSST_OK);
    CHECK_RC(cksst_view_open(bytes, len, &v), CKSST_OK);
    CHECK(cksst_view_len(v) == 0);
    CHECK_RC(cksst_view_contains(v, key(&pk, 0), KEY_LEN), 0);
    cksst_view_free(v);
    cksst_bytes_free(bytes, len);
    cksst_builder_free(b);
    b = cksst_builder_new(&cfg);
    CHECK_RC(cksst_builder_add_key(b, NULL, 0), CKSST_OK);
    CHECK_RC(cksst_builder_finish(b, &bytes, &len), CKSST_OK);
    CHECK_RC(cksst_view_open(bytes, len, &v), CKSST_OK);
    CHECK(cksst_view_len(v) == 1);
    CHECK_RC(cksst_view_contains(v, NULL, 0), 1);
    CHECK_RC(cksst_view_contains(v, (const uint8_t *)"", 0), 1);
    CHECK_RC(cksst_view_contains_hash(v, hash_of(NULL, 0)), 1);
    cksst_view_free(v);
    cksst_bytes_free(bytes, len);
    cksst_builder_free(b);

    /* A compact block of 1000 keys. */
    set_context("a compact block");
    b = cksst_builder_new(&cfg);
    for (i = 0; i < 1000 && i < pk.n; i++) {
        CHECK_RC(cksst_builder_add_key(b, key(&pk, i), KEY_LEN), CKSST_OK);
    }
    CHECK_ERR(cksst_builder_finish_compact_into(b, NULL, 0, &need), CKSST_ERR_BUFFER_TOO_SMALL);
    CHECK_RC(cksst_builder_finish_compact(b, &block, &len), CKSST_OK);
    CHECK(len == need);
    CHECK_ERR(cksst_builder_finish(b, &bytes, &n), CKSST_ERR_FINISHED);
    cksst_builder_free(b);
    CHECK_RC(cksst_compact_check(block, len, &compact_keys), CKSST_OK);
    CHECK(compact_keys == i);
    CHECK_RC(cksst_compact_check(block, len, NULL), CKSST_OK);
    for (n = 0; n < i; n++) {
        CHECKF(cksst_compact_contains(block, len, key(&pk, n), KEY_LEN) == 1, "key %zu", n);
        CHECKF(cksst_compact_contains_hash(block, len, pk.hashes[n]) == 1, "key %zu", n);
    }
    for (n = 0; n < 1000; n++) {
        int r = cksst_compact_contains(block, len, key(&ak, n), KEY_LEN);
        CHECKF(r == 0 || r == 1, "absent key %zu: %d", n, r);
    }
    /* A compact block is not a filter file, nor a filter file a compact block. */
    CHECK_FAILS(cksst_view_open(block, len, &v));
    CHECK_FAILS(cksst_compact_contains(f0->bytes, f0->len, key(&pk, 0), KEY_LEN));
    CHECK_FAILS(cksst_compact_check(f0->bytes, f0->len, NULL));
    CHECK_FAILS(cksst_compact_check(block, len - 1, NULL));
    CHECK_FAILS(cksst_compact_check(block, 0, NULL));
    /* A changed seed index (compact version 2, FORMAT.md §11.5: bits 0-2 of byte 1): the check
     * over the header and the length refuses it, CKSST_ERR_CORRUPT from the check and from
     * every lookup ("maybe" for a filter policy), unless the 4-bit check agrees by chance
     * (1 in 16); such a block reads with an unrelated seed and loses almost every key. A
     * version nibble of 0 is damage (CKSST_ERR_CORRUPT), one above 2 a newer block. */
    {
        uint8_t original = block[1];
        int refused = 0, other = 0;
        CHECK(block[0] == 0xC2);
        for (uint8_t k = 0; k < 8; k++) {
            if (k == (original & 7)) {
                continue;
            }
            other++;
            block[1] = (uint8_t)((original & ~7) | k);
            if (cksst_compact_check(block, len, NULL) == CKSST_ERR_CORRUPT) {
                CHECK_ERR(cksst_compact_contains(block, len, key(&pk, 0), KEY_LEN),
                          CKSST_ERR_CORRUPT);
                refused++;
            } else {
                size_t lost = 0;
                CHECK_RC(cksst_compact_check(block, len, &compact_keys), CKSST_OK);
                for (n = 0; n < i; n++) {
                    lost += cksst_compact_contains(block, len, key(&pk, n), KEY_LEN) == 0;
                }
                CHECKF(lost * 100 >= i * 95, "%zu of %zu keys lost", lost, i);
            }
        }
        CHECKF(other == 7 && refused >= 6, "%d of %d other seed indices refused", refused, other);
        block[1] = original;
        block[0] = 0xC0;
        CHECK_ERR(cksst_compact_check(block, len, NULL), CKSST_ERR_CORRUPT);
        CHECK_ERR(cksst_compact_contains(block, len, key(&pk, 0), KEY_LEN), CKSST_ERR_CORRUPT);
        block[0] = 0xC3;
        CHECK_ERR(cksst_compact_check(block, len, NULL), CKSST_ERR_UNSUPPORTED_VERSION);
        block[0] = 0xC2;
        CHECK_RC(cksst_compact_check(block, len, NULL), CKSST_OK);
    }

    /* The same keys in one call, without a builder: the same bytes, into a buffer of the
     * documented bound; a buffer one byte short is refused with the length, nothing written
     * past it; no keys make the empty block; bad pointers are refused. */
    set_context("cksst_compact_build_into");
    {
        const uint8_t **ptrs = malloc(i * sizeof *ptrs);
        size_t *lens = malloc(i * sizeof *lens);
        size_t bound = 16 + 2 * i, got = 0;
        uint8_t *out = malloc(bound + 1);
        CHECK(ptrs != NULL && lens != NULL && out != NULL);
        for (n = 0; n < i; n++) {
            ptrs[n] = key(&pk, n);
            lens[n] = KEY_LEN;
        }
        CHECK(len <= bound);
        CHECK_RC(cksst_compact_build_into(ptrs, lens, i, out, bound, &got), CKSST_OK);
        CHECK(got == len && memcmp(out, block, len) == 0);
        memset(out, 0x5A, bound + 1);
        CHECK_ERR(cksst_compact_build_into(ptrs, lens, i, out, len - 1, &got),
                  CKSST_ERR_BUFFER_TOO_SMALL);
        CHECK(got == len);
        for (n = 0; n <= bound; n++) {
            CHECKF(out[n] == 0x5A, "byte %zu written by a refused call", n);
        }
        CHECK_RC(cksst_compact_build_into(NULL, NULL, 0, out, bound, &got), CKSST_OK);
        CHECK(got == 2 && out[0] == 0xC2);
        CHECK_RC(cksst_compact_check(out, got, &compact_keys), CKSST_OK);
        CHECK(compact_keys == 0);
        CHECK_ERR(cksst_compact_build_into(NULL, lens, 3, out, bound, &got),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_compact_build_into(ptrs, NULL, 3, out, bound, &got),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_compact_build_into(ptrs, lens, i, NULL, bound, &got),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_compact_build_into(ptrs, lens, i, out, bound, NULL),
                  CKSST_ERR_INVALID_ARGUMENT);
        lens[1] = 5;
        ptrs[1] = NULL;
        CHECK_ERR(cksst_compact_build_into(ptrs, lens, i, out, bound, &got),
                  CKSST_ERR_INVALID_ARGUMENT);
        free(out);
        free(lens);
        free(ptrs);
    }
    cksst_bytes_free(block, len);
}

/* ------------------------------------------------------------------------------------------ */
/* 5. Bad input */

static void section_null_arguments(void)
{
    const fixture *f0 = &singles[0];
    cksst_view *v = NULL, *views[2];
    cksst_view_set *set = NULL;
    cksst_mapped *m = NULL;
    cksst_growable *g = NULL;
    cksst_builder *b;
    cksst_config cfg;
    uint8_t *bytes = NULL;
    size_t len = 0, index = 0;
    bool answers[4];
    const uint8_t *keys[2];
    size_t lens[2];
    uint64_t hashes[2];
    char path[4096];
    int fd;

    set_context("NULL handles and pointers");
    path_in(path, sizeof path, f0->file);
    keys[0] = key(&pk, 0);
    keys[1] = NULL;
    lens[0] = KEY_LEN;
    lens[1] = 0;
    hashes[0] = pk.hashes[0];
    hashes[1] = ak.hashes[0];

    /* Freeing NULL does nothing. */
    cksst_bytes_free(NULL, 0);
    cksst_bytes_free(NULL, 10);
    cksst_builder_free(NULL);
    cksst_view_free(NULL);
    cksst_view_set_free(NULL);
    cksst_mapped_free(NULL);
    cksst_growable_free(NULL);

    CHECK_ERR(cksst_config_init(NULL, 0), CKSST_ERR_INVALID_ARGUMENT);

    /* The builder. */
    CHECK_ERR(cksst_builder_add_key(NULL, key(&pk, 0), KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cksst_last_error(), "builder") != NULL);
    CHECK_ERR(cksst_builder_add_hash(NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(cksst_builder_len(NULL) == 0);
    CHECK_ERR(cksst_builder_finish(NULL, &bytes, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish_into(NULL, NULL, 0, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish_compact(NULL, &bytes, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish_compact_into(NULL, NULL, 0, &len),
              CKSST_ERR_INVALID_ARGUMENT);
    b = cksst_builder_new(NULL);
    CHECK(b != NULL);
    CHECK_ERR(cksst_builder_add_key(b, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cksst_last_error(), "NULL") != NULL);
    CHECK(cksst_builder_len(b) == 0);
    CHECK_RC(cksst_builder_add_key(b, NULL, 0), CKSST_OK);
    CHECK(cksst_builder_len(b) == 1);
    /* A NULL output pointer does not finish the builder. */
    CHECK_ERR(cksst_builder_finish(b, NULL, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish(b, &bytes, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish_compact(b, NULL, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish_compact(b, &bytes, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(cksst_builder_len(b) == 1);
    CHECK_RC(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_OK);
    CHECK_ERR(cksst_builder_finish_into(b, NULL, 0, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish_into(b, NULL, 1 << 20, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_builder_finish(b, &bytes, &len), CKSST_OK);
    CHECK(bytes != NULL);
    CHECK_RC(cksst_view_open(bytes, len, &v), CKSST_OK);
    CHECK(cksst_view_len(v) == 2);
    cksst_view_free(v);
    v = NULL;
    cksst_bytes_free(bytes, len);
    bytes = NULL;
    cksst_builder_free(b);
    b = cksst_builder_new(NULL);
    CHECK_RC(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_OK);
    CHECK_ERR(cksst_builder_finish_compact_into(b, NULL, 0, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_builder_finish_compact_into(b, NULL, 1 << 20, &len),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_builder_finish_compact(b, &bytes, &len), CKSST_OK);
    CHECK_RC(cksst_compact_contains(bytes, len, key(&pk, 0), KEY_LEN), 1);
    cksst_bytes_free(bytes, len);
    bytes = NULL;
    cksst_builder_free(b);

    /* Views. */
    CHECK_ERR(cksst_view_open(NULL, 200, &v), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_open(f0->bytes, f0->len, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_open_trusted(NULL, 200, &v), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_open_trusted(f0->bytes, f0->len, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_FAILS(cksst_view_open(NULL, 0, &v));
    CHECK(v == NULL);
    CHECK_ERR(cksst_view_contains(NULL, key(&pk, 0), KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cksst_last_error(), "view") != NULL);
    CHECK_ERR(cksst_view_contains_hash(NULL, pk.hashes[0]), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_contains_batch(NULL, hashes, 2, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_contains_keys(NULL, keys, lens, 2, answers),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK(cksst_view_len(NULL) == 0);
    CHECK(cksst_view_expected_fpr(NULL) == 1.0);
    CHECK_RC(cksst_view_open(f0->bytes, f0->len, &v), CKSST_OK);
    CHECK_ERR(cksst_view_contains(v, NULL, KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_view_contains(v, NULL, 0), cksst_view_contains(v, (const uint8_t *)"", 0));
    CHECK_RC(cksst_view_contains(v, NULL, 0), cksst_view_contains_hash(v, hash_of(NULL, 0)));
    CHECK_ERR(cksst_view_contains_batch(v, NULL, 2, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_contains_batch(v, hashes, 2, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_view_contains_batch(v, NULL, 0, NULL), CKSST_OK);
    CHECK_ERR(cksst_view_contains_keys(v, NULL, lens, 2, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_contains_keys(v, keys, NULL, 2, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_contains_keys(v, keys, lens, 2, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_view_contains_keys(v, NULL, NULL, 0, NULL), CKSST_OK);
    /* keys[1] is NULL with length 0: the empty key. */
    answers[0] = answers[1] = false;
    CHECK_RC(cksst_view_contains_keys(v, keys, lens, 2, answers), CKSST_OK);
    CHECK(answers[0] == true);
    CHECK((int)answers[1] == cksst_view_contains(v, NULL, 0));
    lens[1] = 3; /* NULL with length 3 */
    CHECK_ERR(cksst_view_contains_keys(v, keys, lens, 2, answers), CKSST_ERR_INVALID_ARGUMENT);
    lens[1] = 0;

    /* Sets. */
    views[0] = v;
    views[1] = NULL;
    CHECK_ERR(cksst_view_set_new(NULL, 2, &set), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_set_new((const cksst_view *const *)views, 2, &set),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_set_new((const cksst_view *const *)views, 1, NULL),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK(set == NULL);
    CHECK_ERR(cksst_view_set_first_containing(NULL, pk.hashes[0], &index),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_view_set_contains_each(NULL, pk.hashes[0], answers, 1),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_view_set_new((const cksst_view *const *)views, 1, &set), CKSST_OK);
    CHECK_ERR(cksst_view_set_first_containing(set, pk.hashes[0], NULL),
              CKSST_ERR_INVALID_ARGUMENT);
    {
        /* The header: "A negative error code for a NULL argument." */
        size_t i;
        for (i = 0; i < ak.n && cksst_view_contains_hash(v, ak.hashes[i]) != 0; i++) {
        }
        CHECK(i < ak.n);
        CHECK_ERR(cksst_view_set_first_containing(set, ak.hashes[i], NULL),
                  CKSST_ERR_INVALID_ARGUMENT);
    }
    CHECK_ERR(cksst_view_set_contains_each(set, pk.hashes[0], NULL, 1),
              CKSST_ERR_INVALID_ARGUMENT);
    cksst_view_set_free(set);
    cksst_view_free(v);
    v = NULL;

    /* Compact blocks. */
    CHECK_ERR(cksst_compact_contains(NULL, 10, key(&pk, 0), KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_compact_contains(f0->bytes, f0->len, NULL, 3), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_compact_contains_hash(NULL, 10, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_compact_check(NULL, 10, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_FAILS(cksst_compact_contains(NULL, 0, NULL, 0));
    CHECK_FAILS(cksst_compact_check(NULL, 0, &len));

    /* Mapped files. */
    CHECK_ERR(cksst_mapped_open(NULL, &m), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cksst_last_error(), "path") != NULL);
    CHECK_ERR(cksst_mapped_open(path, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_open_lazy(NULL, &m), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_open_lazy(path, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_open_range(-1, 0, f0->len, 0, &m), CKSST_ERR_INVALID_ARGUMENT);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_ERR(cksst_mapped_open_range(fd, 0, f0->len, 0, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_open_range(fd, 0, f0->len, 1, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_FAILS(cksst_mapped_open_range(fd, 0, 0, 0, &m));
    CHECK(close(fd) == 0);
    /* A descriptor that is not open (just closed). */
    CHECK_FAILS(cksst_mapped_open_range(fd, 0, f0->len, 0, &m));
    CHECK(m == NULL);
    CHECK_ERR(cksst_mapped_verify(NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_contains(NULL, key(&pk, 0), KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_contains_hash(NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_contains_batch(NULL, hashes, 2, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(cksst_mapped_len(NULL) == 0);
    CHECK(cksst_mapped_levels(NULL) == 0);
    CHECK_RC(cksst_mapped_open(path, &m), CKSST_OK);
    CHECK_ERR(cksst_mapped_contains(m, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_mapped_contains(m, NULL, 0), cksst_mapped_contains_hash(m, hash_of(NULL, 0)));
    CHECK_ERR(cksst_mapped_contains_batch(m, NULL, 2, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_contains_batch(m, hashes, 2, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_mapped_contains_batch(m, NULL, 0, NULL), CKSST_OK);
    cksst_mapped_free(m);
    m = NULL;

    /* Growable filters. */
    CHECK_RC(cksst_config_init(&cfg, 10), CKSST_OK);
    CHECK_ERR(cksst_growable_new(&cfg, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_new(NULL, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_open(NULL, &g), CKSST_ERR_INVALID_ARGUMENT);
    path_in(path, sizeof path, growable.file);
    CHECK_ERR(cksst_growable_open(path, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_from_bytes(NULL, 10, &g), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_from_bytes(growable.bytes, growable.len, NULL),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_FAILS(cksst_growable_from_bytes(NULL, 0, &g));
    CHECK(g == NULL);
    CHECK_ERR(cksst_growable_insert(NULL, key(&pk, 0), KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_insert_unique(NULL, key(&pk, 0), KEY_LEN),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_remove(NULL, key(&pk, 0), KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_contains(NULL, key(&pk, 0), KEY_LEN), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_contains_hash(NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(cksst_growable_len(NULL) == 0);
    CHECK(cksst_growable_levels(NULL) == 0);
    CHECK_ERR(cksst_growable_save(NULL, path), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_to_bytes(NULL, &bytes, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_RC(cksst_growable_new(&cfg, &g), CKSST_OK);
    CHECK_ERR(cksst_growable_insert(g, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_insert_unique(g, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_remove(g, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_contains(g, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(cksst_growable_len(g) == 0);
    CHECK_RC(cksst_growable_insert_unique(g, NULL, 0), 1);
    CHECK_RC(cksst_growable_insert_unique(g, NULL, 0), 0);
    CHECK_ERR(cksst_growable_save(g, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_to_bytes(g, NULL, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_growable_to_bytes(g, &bytes, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(bytes == NULL);
    cksst_growable_free(g);
}

static void section_bad_bytes(void)
{
    const fixture *f0 = &singles[0], *small = NULL, *large = NULL;
    size_t k, p, i;
    uint8_t *buf, text[4096];
    cksst_view *v = NULL;
    cksst_mapped *m = NULL;
    cksst_growable *g = NULL;
    char path[4096];

    /* The smallest fixture with a key, and the largest. */
    for (k = 0; k < n_singles; k++) {
        if (singles[k].keys > 0 && (small == NULL || singles[k].len < small->len)) {
            small = &singles[k];
        }
        if (large == NULL || singles[k].len > large->len) {
            large = &singles[k];
        }
    }
    CHECK(small != NULL && large != NULL);

    /* Every prefix of the small fixtures (each in a buffer of exactly its length). */
    for (k = 0; k < n_singles; k++) {
        const fixture *f = &singles[k];
        if (f != small && f->keys != 0) {
            continue;
        }
        set_context("every prefix of %s (%zu bytes)", f->file, f->len);
        for (p = 0; p < f->len; p++) {
            buf = copy_of(f->bytes, p);
            v = NULL;
            CHECK_FAILS(cksst_view_open(buf, p, &v));
            CHECK_FAILS(cksst_view_open_trusted(buf, p, &v));
            CHECK(v == NULL);
            free(buf);
        }
    }
    /* Some prefixes of the large one: in the magic, the header, the level table, the
     * checksum table, the buckets (the first chunk, the second, the middle, the end). */
    set_context("prefixes of %s (%zu bytes)", large->file, large->len);
    {
        size_t cut[] = {0, 1, 7, 8, 9, 12, 127, 128, 129, 191, 192, 193, 255, 256, 4096,
                        65536, 65537, 0, 0, 0};
        const size_t n_cut = sizeof cut / sizeof cut[0];
        cut[n_cut - 3] = large->len / 2;
        cut[n_cut - 2] = large->len - 64;
        cut[n_cut - 1] = large->len - 1;
        for (i = 0; i < n_cut; i++) {
            p = cut[i];
            if (p >= large->len) {
                continue;
            }
            buf = copy_of(large->bytes, p);
            CHECK_FAILS(cksst_view_open(buf, p, &v));
            CHECK_FAILS(cksst_view_open_trusted(buf, p, &v));
            if (p >= 128) {
                /* A whole header that says the file is longer. */
                CHECKF(cksst_view_open(buf, p, &v) == CKSST_ERR_TRUNCATED, "prefix %zu", p);
            }
            free(buf);
        }
    }
    /* Trailing bytes. */
    set_context("%s with bytes after it", f0->file);
    buf = xmalloc(f0->len + 64);
    memcpy(buf, f0->bytes, f0->len);
    memset(buf + f0->len, 0, 64);
    CHECK_ERR(cksst_view_open(buf, f0->len + 1, &v), CKSST_ERR_TRAILING_BYTES);
    CHECK_ERR(cksst_view_open(buf, f0->len + 64, &v), CKSST_ERR_TRAILING_BYTES);
    CHECK_ERR(cksst_view_open_trusted(buf, f0->len + 64, &v), CKSST_ERR_TRAILING_BYTES);
    free(buf);
    /* A truncated file, mapped. */
    write_file("truncated.cksst", f0->bytes, f0->len - 1);
    path_in(path, sizeof path, "truncated.cksst");
    CHECK_ERR(cksst_mapped_open(path, &m), CKSST_ERR_TRUNCATED);
    CHECK_ERR(cksst_mapped_open_lazy(path, &m), CKSST_ERR_TRUNCATED);
    CHECK(m == NULL);
    /* A truncated growable filter. */
    set_context("prefixes of %s", growable.file);
    for (p = 0; p < growable.len; p += p < 300 ? 1 : growable.len / 37) {
        buf = copy_of(growable.bytes, p);
        CHECK_FAILS(cksst_growable_from_bytes(buf, p, &g));
        CHECK(g == NULL);
        free(buf);
    }

    /* Damage. */
    buf = copy_of(f0->bytes, f0->len);
    set_context("%s with its last byte (a bucket) changed", f0->file);
    buf[f0->len - 1] ^= 0x10;
    CHECK_ERR(cksst_view_open(buf, f0->len, &v), CKSST_ERR_CHECKSUM_MISMATCH);
    CHECK(strstr(cksst_last_error(), "checksum") != NULL);
    /* Trusted: only the header and level table are checked; any answer, no crash. */
    CHECK_RC(cksst_view_open_trusted(buf, f0->len, &v), CKSST_OK);
    for (i = 0; i < f0->keys; i++) {
        int r = cksst_view_contains(v, key(&pk, i), KEY_LEN);
        CHECK(r == 0 || r == 1);
    }
    cksst_view_free(v);
    v = NULL;
    write_file("damaged_bucket.cksst", buf, f0->len);
    path_in(path, sizeof path, "damaged_bucket.cksst");
    CHECK_ERR(cksst_mapped_open(path, &m), CKSST_ERR_CHECKSUM_MISMATCH);
    buf[f0->len - 1] ^= 0x10;

    set_context("%s with its magic changed", f0->file);
    buf[0] ^= 0x01;
    CHECK_ERR(cksst_view_open(buf, f0->len, &v), CKSST_ERR_BAD_MAGIC);
    CHECK_ERR(cksst_view_open_trusted(buf, f0->len, &v), CKSST_ERR_BAD_MAGIC);
    write_file("bad_magic.cksst", buf, f0->len);
    path_in(path, sizeof path, "bad_magic.cksst");
    CHECK_ERR(cksst_mapped_open(path, &m), CKSST_ERR_BAD_MAGIC);
    CHECK_ERR(cksst_mapped_open_lazy(path, &m), CKSST_ERR_BAD_MAGIC);
    buf[0] ^= 0x01;

    set_context("%s with a newer version", f0->file);
    buf[8] = 200; /* version, u32 LE at offset 8 */
    CHECK_ERR(cksst_view_open(buf, f0->len, &v), CKSST_ERR_UNSUPPORTED_VERSION);
    memcpy(buf, f0->bytes, 16);

    set_context("%s with a header byte changed", f0->file);
    buf[40] ^= 0x01; /* the seed */
    CHECK_ERR(cksst_view_open(buf, f0->len, &v), CKSST_ERR_CHECKSUM_MISMATCH);
    CHECK_ERR(cksst_view_open_trusted(buf, f0->len, &v), CKSST_ERR_CHECKSUM_MISMATCH);
    buf[40] ^= 0x01;
    set_context("%s with a level-table byte changed", f0->file);
    buf[130] ^= 0x01;
    CHECK_ERR(cksst_view_open(buf, f0->len, &v), CKSST_ERR_CHECKSUM_MISMATCH);
    CHECK_ERR(cksst_view_open_trusted(buf, f0->len, &v), CKSST_ERR_CHECKSUM_MISMATCH);
    buf[130] ^= 0x01;
    CHECK(memcmp(buf, f0->bytes, f0->len) == 0);
    CHECK(v == NULL && m == NULL);
    free(buf);

    /* A damaged bucket of a lazily mapped file: never "absent" for a present key. */
    set_context("%s with a bucket byte changed, mapped lazily", large->file);
    buf = copy_of(large->bytes, large->len);
    buf[large->len - 100] ^= 0xFF;
    write_file("damaged_lazy.cksst", buf, large->len);
    path_in(path, sizeof path, "damaged_lazy.cksst");
    CHECK_RC(cksst_mapped_open_lazy(path, &m), CKSST_OK);
    for (i = 0; i < large->keys; i++) {
        CHECKF(cksst_mapped_contains(m, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
    }
    memset(out, 0, large->keys * sizeof *out);
    CHECK_RC(cksst_mapped_contains_batch(m, pk.hashes, large->keys, out), CKSST_OK);
    for (i = 0; i < large->keys; i++) {
        CHECKF(out[i], "present key %zu (batch)", i);
    }
    CHECK_ERR(cksst_mapped_verify(m), CKSST_ERR_CHECKSUM_MISMATCH);
    CHECK_ERR(cksst_mapped_verify(m), CKSST_ERR_CHECKSUM_MISMATCH);
    for (i = 0; i < large->keys; i++) {
        CHECKF(cksst_mapped_contains_hash(m, pk.hashes[i]) == 1, "present key %zu", i);
    }
    cksst_mapped_free(m);
    m = NULL;
    /* Verified first, then asked. */
    CHECK_RC(cksst_mapped_open_lazy(path, &m), CKSST_OK);
    CHECK_ERR(cksst_mapped_verify(m), CKSST_ERR_CHECKSUM_MISMATCH);
    for (i = 0; i < large->keys; i++) {
        CHECKF(cksst_mapped_contains(m, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
    }
    cksst_mapped_free(m);
    m = NULL;
    CHECK_ERR(cksst_mapped_open(path, &m), CKSST_ERR_CHECKSUM_MISMATCH);
    CHECK_ERR(cksst_view_open(buf, large->len, &v), CKSST_ERR_CHECKSUM_MISMATCH);
    free(buf);

    /* Not a filter at all: 4 KiB of text. */
    set_context("a foreign file");
    for (i = 0; i < sizeof text; i++) {
        text[i] = (uint8_t)("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n"[i % 57]);
    }
    CHECK_ERR(cksst_view_open(text, sizeof text, &v), CKSST_ERR_BAD_MAGIC);
    CHECK_ERR(cksst_view_open_trusted(text, sizeof text, &v), CKSST_ERR_BAD_MAGIC);
    CHECK_ERR(cksst_growable_from_bytes(text, sizeof text, &g), CKSST_ERR_BAD_MAGIC);
    write_file("foreign.txt", text, sizeof text);
    path_in(path, sizeof path, "foreign.txt");
    CHECK_ERR(cksst_mapped_open(path, &m), CKSST_ERR_BAD_MAGIC);
    CHECK_ERR(cksst_mapped_open_lazy(path, &m), CKSST_ERR_BAD_MAGIC);
    CHECK_ERR(cksst_growable_open(path, &g), CKSST_ERR_BAD_MAGIC);
    CHECK(v == NULL && m == NULL && g == NULL);

    /* No such file. */
    set_context("a path that does not exist");
    path_in(path, sizeof path, "no/such/file.cksst");
    CHECK_ERR(cksst_mapped_open(path, &m), CKSST_ERR_IO);
    CHECK_ERR(cksst_mapped_open_lazy(path, &m), CKSST_ERR_IO);
    CHECK_ERR(cksst_growable_open(path, &g), CKSST_ERR_IO);
    CHECK_RC(cksst_growable_new(NULL, &g), CKSST_OK);
    CHECK_ERR(cksst_growable_save(g, path), CKSST_ERR_IO);
    cksst_growable_free(g);
    g = NULL;
    CHECK_ERR(cksst_mapped_open("", &m), CKSST_ERR_IO);
    CHECK(m == NULL);
}

static void section_bad_config(void)
{
    cksst_config cfg;
    cksst_growable *g = NULL;
    cksst_builder *b;
    uint8_t *bytes = NULL;
    size_t len = 0;

    set_context("bucket_size 3");
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.bucket_size = 3;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK(strstr(cksst_last_error(), "bucket") != NULL);
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    CHECK_RC(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_OK);
    CHECK_ERR(cksst_builder_finish(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(bytes == NULL);
    cksst_builder_free(b);

    set_context("encoding 9");
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.encoding = 9;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK(strstr(cksst_last_error(), "encoding") != NULL);
    /* The header: "Invalid settings are reported when it finishes." */
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    CHECK_RC(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_OK);
    CHECK_ERR(cksst_builder_finish_into(b, NULL, 0, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(strstr(cksst_last_error(), "encoding") != NULL);
    CHECK_ERR(cksst_builder_finish(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(strstr(cksst_last_error(), "encoding") != NULL);
    cksst_builder_free(b);

    set_context("other impossible settings");
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.false_positive_rate = 0.0;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    cfg.false_positive_rate = 1.5;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    CHECK_ERR(cksst_builder_finish(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    cksst_builder_free(b);
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.fingerprint_bits = 40;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    CHECK_RC(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_OK);
    CHECK_ERR(cksst_builder_finish(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    cksst_builder_free(b);
    /* A fixed width cannot bound a growing filter's rate. */
    cfg.fingerprint_bits = 16;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.growth_factor = 0.5;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.tightening = 1.0;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.max_bytes = 100;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK(g == NULL);
    /* A compact block needs the default seed. */
    CHECK_RC(cksst_config_init(&cfg, 0), CKSST_OK);
    cfg.seed ^= 1;
    b = cksst_builder_new(&cfg);
    CHECK_RC(cksst_builder_add_key(b, key(&pk, 0), KEY_LEN), CKSST_OK);
    CHECK_ERR(cksst_builder_finish_compact(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(bytes == NULL);
    cksst_builder_free(b);
}

/* ------------------------------------------------------------------------------------------ */
/* Issue 40's review of the C interface: what a caller is left with when a call fails. */

/* Every answer in `answers` is "maybe" (true). */
static int all_maybe(const bool *answers, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (!answers[i]) {
            return 0;
        }
    }
    return 1;
}

static void section_review(void)
{
    const fixture *f0 = &singles[0];
    /* A value left from earlier use: a failed call must not leave it for a cleanup path. */
    void *stale = &checks;
    cksst_view *v, *good = NULL, *views[2];
    cksst_view_set *set;
    cksst_mapped *m;
    cksst_growable *g;
    cksst_builder *b;
    cksst_config cfg;
    uint8_t *bytes;
    size_t len, i;
    bool answers[4];
    const uint8_t *keys[4];
    size_t lens[4];
    uint64_t hashes[4];
    char path[4096];
    static const uint8_t junk[16] = "not a filter....";

    /* Finding 2: output pointers hold NULL (and lengths 0) after a failure. */
    set_context("finding 2: a failed open leaves NULL in its output");
    v = (cksst_view *)stale;
    CHECK_FAILS(cksst_view_open(junk, sizeof junk, &v));
    CHECK(v == NULL);
    v = (cksst_view *)stale;
    CHECK_FAILS(cksst_view_open_trusted(junk, sizeof junk, &v));
    CHECK(v == NULL);
    v = (cksst_view *)stale;
    CHECK_ERR(cksst_view_open(NULL, 5, &v), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(v == NULL);
    path_in(path, sizeof path, "no such file.cksst");
    m = (cksst_mapped *)stale;
    CHECK_ERR(cksst_mapped_open(path, &m), CKSST_ERR_IO);
    CHECK(m == NULL);
    m = (cksst_mapped *)stale;
    CHECK_ERR(cksst_mapped_open_lazy(path, &m), CKSST_ERR_IO);
    CHECK(m == NULL);
    m = (cksst_mapped *)stale;
    CHECK_FAILS(cksst_mapped_open_range(-1, 0, 64, 0, &m));
    CHECK(m == NULL);
    g = (cksst_growable *)stale;
    CHECK_ERR(cksst_growable_open(path, &g), CKSST_ERR_IO);
    CHECK(g == NULL);
    g = (cksst_growable *)stale;
    CHECK_FAILS(cksst_growable_from_bytes(junk, sizeof junk, &g));
    CHECK(g == NULL);
    CHECK_RC(cksst_config_init(&cfg, 1000), CKSST_OK);
    cfg.bucket_size = 3;
    g = (cksst_growable *)stale;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK(g == NULL);
    views[0] = NULL;
    set = (cksst_view_set *)stale;
    CHECK_ERR(cksst_view_set_new((const cksst_view *const *)views, 1, &set),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK(set == NULL);
    set_context("finding 2: a failed finish leaves NULL and 0 in its outputs");
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    bytes = (uint8_t *)stale;
    len = 77;
    CHECK_ERR(cksst_builder_finish(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(bytes == NULL && len == 0);
    bytes = (uint8_t *)stale;
    len = 77;
    CHECK_ERR(cksst_builder_finish_compact(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(bytes == NULL && len == 0);
    len = 77;
    CHECK_ERR(cksst_builder_finish_into(b, NULL, 0, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(len == 0);
    cksst_builder_free(b);
    bytes = (uint8_t *)stale;
    len = 77;
    CHECK_ERR(cksst_growable_to_bytes(NULL, &bytes, &len), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(bytes == NULL && len == 0);

    /* Finding 4: a batch call that fails answers "maybe" for every key. */
    set_context("finding 4: batch outputs are \"maybe\" after an error");
    for (i = 0; i < 4; i++) {
        keys[i] = key(&ak, i);
        lens[i] = KEY_LEN;
        hashes[i] = ak.hashes[i];
    }
    memset(answers, 0, sizeof answers);
    CHECK_ERR(cksst_view_contains_batch(NULL, hashes, 4, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(all_maybe(answers, 4));
    memset(answers, 0, sizeof answers);
    CHECK_ERR(cksst_view_contains_keys(NULL, keys, lens, 4, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(all_maybe(answers, 4));
    memset(answers, 0, sizeof answers);
    CHECK_ERR(cksst_mapped_contains_batch(NULL, hashes, 4, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(all_maybe(answers, 4));
    CHECK_RC(cksst_view_open(f0->bytes, f0->len, &good), CKSST_OK);
    memset(answers, 0, sizeof answers);
    CHECK_ERR(cksst_view_contains_batch(good, NULL, 4, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(all_maybe(answers, 4));
    /* A NULL key among them. */
    keys[2] = NULL;
    memset(answers, 0, sizeof answers);
    CHECK_ERR(cksst_view_contains_keys(good, keys, lens, 4, answers), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(all_maybe(answers, 4));
    views[0] = good;
    views[1] = good;
    CHECK_RC(cksst_view_set_new((const cksst_view *const *)views, 2, &set), CKSST_OK);
    memset(answers, 0, sizeof answers);
    CHECK_ERR(cksst_view_set_contains_each(set, hashes[0], answers, 3),
              CKSST_ERR_INVALID_ARGUMENT);
    CHECK(all_maybe(answers, 3));
    cksst_view_set_free(set);
    cksst_view_free(good);

    /* Finding 3: a file read into memory is out of reach of what is done to the file. */
    set_context("finding 3: cksst_mapped_read, then the file truncated and rewritten");
    write_file("read_then_truncated.cksst", f0->bytes, f0->len);
    path_in(path, sizeof path, "read_then_truncated.cksst");
    m = NULL;
    CHECK_RC(cksst_mapped_read(path, &m), CKSST_OK);
    write_file("read_then_truncated.cksst", junk, sizeof junk);
    for (i = 0; i < f0->keys; i++) {
        CHECKF(cksst_mapped_contains(m, key(&pk, i), KEY_LEN) == 1, "present key %zu", i);
    }
    for (i = 0; i < f0->absent; i++) {
        CHECKF(cksst_mapped_contains(m, key(&ak, i), KEY_LEN) == f0->answers[i],
               "absent key %zu", i);
    }
    CHECK(cksst_mapped_len(m) == f0->keys);
    cksst_mapped_free(m);
    path_in(path, sizeof path, "no such file.cksst");
    m = (cksst_mapped *)stale;
    CHECK_ERR(cksst_mapped_read(path, &m), CKSST_ERR_IO);
    CHECK(m == NULL);

    /* Finding 7: finish_into writes the filter's bytes and nothing after them (it used to
     * borrow the whole stated capacity, uninitialized memory included, as Rust bytes). */
    set_context("finding 7: finish_into writes only the filter's bytes");
    b = cksst_builder_new(NULL);
    CHECK(b != NULL);
    for (i = 0; i < 40; i++) {
        CHECK_RC(cksst_builder_add_key(b, key(&pk, i), KEY_LEN), CKSST_OK);
    }
    CHECK_ERR(cksst_builder_finish_compact_into(b, NULL, 0, &len), CKSST_ERR_BUFFER_TOO_SMALL);
    bytes = xmalloc(len + 64);
    memset(bytes + len, 0xEE, 64);
    CHECK_RC(cksst_builder_finish_compact_into(b, bytes, len + 64, &len), CKSST_OK);
    for (i = 0; i < 64; i++) {
        CHECKF(bytes[len + i] == 0xEE, "byte %zu after the block was written", i);
    }
    CHECK_RC(cksst_compact_contains(bytes, len, key(&pk, 7), KEY_LEN), 1);
    free(bytes);
    cksst_builder_free(b);

    /* Finding 10: a finish_compact refused for its seed leaves finish possible. */
    set_context("finding 10: finish after a refused finish_compact");
    CHECK_RC(cksst_config_init(&cfg, 0), CKSST_OK);
    cfg.seed ^= 1;
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    for (i = 0; i < 100; i++) {
        CHECK_RC(cksst_builder_add_key(b, key(&pk, i), KEY_LEN), CKSST_OK);
    }
    CHECK_ERR(cksst_builder_finish_compact(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(cksst_builder_len(b) == 100);
    bytes = NULL;
    CHECK_RC(cksst_builder_finish(b, &bytes, &len), CKSST_OK);
    cksst_builder_free(b);
    if (bytes != NULL) {
        CHECK_RC(cksst_view_open(bytes, len, &good), CKSST_OK);
        for (i = 0; i < 100; i++) {
            CHECK_RC(cksst_view_contains(good, key(&pk, i), KEY_LEN), 1);
        }
        cksst_view_free(good);
        cksst_bytes_free(bytes, len);
    }

    /* Finding 10: a zeroed configuration says what is missing. */
    set_context("finding 10: a zeroed cksst_config");
    memset(&cfg, 0, sizeof cfg);
    g = NULL;
    CHECK_ERR(cksst_growable_new(&cfg, &g), CKSST_ERR_INVALID_CONFIG);
    CHECK(strstr(cksst_last_error(), "cksst_config_init") != NULL);
    b = cksst_builder_new(&cfg);
    CHECK(b != NULL);
    CHECK_ERR(cksst_builder_finish(b, &bytes, &len), CKSST_ERR_INVALID_CONFIG);
    CHECK(strstr(cksst_last_error(), "cksst_config_init") != NULL);
    cksst_builder_free(b);
}

/* ------------------------------------------------------------------------------------------ */
/* 7. The run index (issue 41): one table for every run of an LSM-tree */


/* The runs that may hold key c i, asked by key and by hash of the owned index `x` or (x NULL)
 * the mapped `m`: both ways must agree. Returns the result; the runs are in `runs` (room for
 * CKSST_RUN_INDEX_MAX_RUNS), their number in *count. */
static int ri_ask(const cksst_run_index *x, const cksst_mapped_run_index *m, const uint8_t *k,
                  uint64_t h, uint64_t *runs, size_t *count)
{
    uint64_t again[CKSST_RUN_INDEX_MAX_RUNS];
    size_t n_again = 99, j;
    int rc, rc2;
    *count = 99;
    if (x != NULL) {
        rc = cksst_run_index_runs_for(x, k, KEY_LEN, runs, CKSST_RUN_INDEX_MAX_RUNS, count);
        rc2 = cksst_run_index_runs_for_hash(x, h, again, CKSST_RUN_INDEX_MAX_RUNS, &n_again);
    } else {
        rc = cksst_mapped_run_index_runs_for(m, k, KEY_LEN, runs, CKSST_RUN_INDEX_MAX_RUNS, count);
        rc2 = cksst_mapped_run_index_runs_for_hash(m, h, again, CKSST_RUN_INDEX_MAX_RUNS,
                                                   &n_again);
    }
    CHECKF(rc == rc2 && *count == n_again, "by key %d (%zu runs), by hash %d (%zu runs)", rc,
           *count, rc2, n_again);
    CHECKF(rc == 0 || rc == 1, "result %d (%s)", rc, cksst_status_name(rc));
    CHECKF((rc == 1) == (*count > 0) && *count <= CKSST_RUN_INDEX_MAX_RUNS, "rc %d, %zu runs", rc,
           *count);
    for (j = 0; j < *count && j < n_again; j++) {
        CHECKF(runs[j] == again[j], "run %zu: %llu by key, %llu by hash", j,
               (unsigned long long)runs[j], (unsigned long long)again[j]);
    }
    return rc;
}

/* Keys [from, to) of `ks` asked in one batch (by key and by hash) of the owned index `x` or
 * (x NULL) the mapped `m`, with room for every run and then for `cap` runs a key: each key's
 * row, count and result are what ri_ask gives it one at a time (with `cap`: the newest `cap`
 * runs and CKSST_ERR_BUFFER_TOO_SMALL for a key in more, the call's result saying whether any
 * key was); bad arguments are refused before anything is written. */
static void ri_batch(const cksst_run_index *x, const cksst_mapped_run_index *m, const keyset *ks,
                     size_t from, size_t to, size_t cap)
{
    const size_t n = to - from, R = CKSST_RUN_INDEX_MAX_RUNS;
    uint64_t *rows = xmalloc((n ? n : 1) * R * sizeof *rows), one[CKSST_RUN_INDEX_MAX_RUNS];
    size_t *counts = xmalloc((n ? n : 1) * sizeof *counts), i, j, c1;
    int *results = xmalloc((n ? n : 1) * sizeof *results), pass, rc, r1, too_small = 0;
    for (pass = 0; pass < 4; pass++) {
        size_t room = pass < 2 ? R : cap;
        memset(counts, 0xAB, (n ? n : 1) * sizeof *counts);
        memset(results, 0x5A, (n ? n : 1) * sizeof *results);
        if (x != NULL) {
            rc = pass % 2 == 0
                     ? cksst_run_index_runs_for_keys(x, ks->ptrs + from, ks->lens + from, n, rows,
                                                     room, counts, results)
                     : cksst_run_index_runs_for_hashes(x, ks->hashes + from, n, rows, room, counts,
                                                       results);
        } else {
            rc = pass % 2 == 0
                     ? cksst_mapped_run_index_runs_for_keys(m, ks->ptrs + from, ks->lens + from, n,
                                                            rows, room, counts, results)
                     : cksst_mapped_run_index_runs_for_hashes(m, ks->hashes + from, n, rows, room,
                                                              counts, results);
        }
        too_small = 0;
        for (i = 0; i < n; i++) {
            r1 = ri_ask(x, m, key(ks, from + i), ks->hashes[from + i], one, &c1);
            CHECKF(counts[i] == c1, "key %zu: %zu runs in the batch, %zu alone", from + i,
                   counts[i], c1);
            if (c1 > room) {
                CHECKF(results[i] == CKSST_ERR_BUFFER_TOO_SMALL, "key %zu: result %d", from + i,
                       results[i]);
                too_small = 1;
            } else {
                CHECKF(results[i] == r1, "key %zu: result %d in the batch, %d alone", from + i,
                       results[i], r1);
            }
            for (j = 0; j < c1 && j < room; j++) {
                CHECKF(rows[i * room + j] == one[j], "key %zu, run %zu", from + i, j);
            }
        }
        CHECKF(rc == (too_small ? CKSST_ERR_BUFFER_TOO_SMALL : CKSST_OK), "batch result %d (%s)",
               rc, cksst_status_name(rc));
    }
    /* Refused before anything is written: no index, NULL rows with room, NULL counts. */
    if (n > 0) {
        results[0] = 77;
        CHECK_ERR(cksst_run_index_runs_for_hashes(NULL, ks->hashes + from, n, rows, R, counts,
                                                  results),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_for_keys(NULL, ks->ptrs + from, ks->lens + from, n,
                                                       rows, R, counts, results),
                  CKSST_ERR_INVALID_ARGUMENT);
        if (x != NULL) {
            CHECK_ERR(cksst_run_index_runs_for_keys(x, ks->ptrs + from, ks->lens + from, n, NULL,
                                                    1, counts, results),
                      CKSST_ERR_INVALID_ARGUMENT);
            CHECK_ERR(cksst_run_index_runs_for_hashes(x, ks->hashes + from, n, rows, 1, NULL,
                                                      results),
                      CKSST_ERR_INVALID_ARGUMENT);
            CHECK_ERR(cksst_run_index_runs_for_hashes(x, ks->hashes + from, n, rows, SIZE_MAX,
                                                      counts, results),
                      CKSST_ERR_INVALID_ARGUMENT);
        } else {
            CHECK_ERR(cksst_mapped_run_index_runs_for_hashes(m, ks->hashes + from, n, rows, 1,
                                                             counts, NULL),
                      CKSST_ERR_INVALID_ARGUMENT);
        }
        CHECK(results[0] == 77);
    }
    /* No keys: nothing to write, NULL arrays allowed. */
    CHECK_RC(x != NULL ? cksst_run_index_runs_for_hashes(x, NULL, 0, NULL, 4, NULL, NULL)
                       : cksst_mapped_run_index_runs_for_keys(m, NULL, NULL, 0, NULL, 4, NULL,
                                                              NULL),
             CKSST_OK);
    free(rows);
    free(counts);
    free(results);
}

/* Whether `run` is among the `n` runs. */
static int has_run(const uint64_t *runs, size_t n, uint64_t run)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (runs[j] == run) {
            return 1;
        }
    }
    return 0;
}

/* The runs answered are in the order of `order` (the index's runs, newest first), each once. */
static void check_newest_first(const uint64_t *runs, size_t n, const uint64_t *order,
                               size_t n_order)
{
    size_t j, at = 0;
    for (j = 0; j < n; j++) {
        while (at < n_order && order[at] != runs[j]) {
            ++at;
        }
        CHECKF(at < n_order, "run %llu (answer %zu of %zu) is not in the index's order, or out of "
               "order", (unsigned long long)runs[j], j, n);
        ++at;
    }
}

/* The index (owned `x` or mapped `m`) describes exactly `order`, newest first. */
static void check_runs(const cksst_run_index *x, const cksst_mapped_run_index *m,
                       const uint64_t *order, size_t n)
{
    uint64_t got[CKSST_RUN_INDEX_MAX_RUNS], digest = 0, want = 1;
    size_t count = 99, j;
    if (x != NULL) {
        CHECK_RC(cksst_run_index_runs(x, got, CKSST_RUN_INDEX_MAX_RUNS, &count), CKSST_OK);
        CHECK(cksst_run_index_run_count(x) == n);
        CHECK_RC(cksst_run_index_describes(x, order, n), 1);
        CHECK_RC(cksst_run_index_runs_digest(x, &digest), CKSST_OK);
        CHECK_RC(cksst_run_index_is_stale(x), 0);
    } else {
        CHECK_RC(cksst_mapped_run_index_runs(m, got, CKSST_RUN_INDEX_MAX_RUNS, &count), CKSST_OK);
        CHECK(cksst_mapped_run_index_run_count(m) == n);
        CHECK_RC(cksst_mapped_run_index_describes(m, order, n), 1);
        CHECK_RC(cksst_mapped_run_index_runs_digest(m, &digest), CKSST_OK);
        CHECK_RC(cksst_mapped_run_index_is_stale(m), 0);
    }
    CHECKF(count == n, "%zu runs, expected %zu", count, n);
    for (j = 0; j < n && j < count; j++) {
        CHECKF(got[j] == order[j], "run %zu: %llu, expected %llu", j, (unsigned long long)got[j],
               (unsigned long long)order[j]);
    }
    CHECK_RC(cksst_runs_digest_of(order, n, &want), CKSST_OK);
    CHECK(digest == want);
}

/* Every key of run `run` (keys c from .. to-1, except those `skip` says were dropped) is
 * answered with `run` among its runs, newest first; no answer names a run outside `order`. */
static void check_run_keys(const cksst_run_index *x, const cksst_mapped_run_index *m,
                           uint64_t run, size_t from, size_t to, size_t skip_every,
                           const uint64_t *order, size_t n_order)
{
    uint64_t runs[CKSST_RUN_INDEX_MAX_RUNS];
    size_t i, count;
    for (i = from; i < to; i++) {
        if (skip_every != 0 && i % skip_every == 0) {
            continue;
        }
        set_context("run index: key c %zu of run %llu", i, (unsigned long long)run);
        CHECK_RC(ri_ask(x, m, key(&ck, i), ck.hashes[i], runs, &count), 1);
        CHECKF(has_run(runs, count, run), "key c %zu: run %llu not among its %zu runs", i,
               (unsigned long long)run, count);
        check_newest_first(runs, count, order, n_order);
    }
}

/* How many of the first n absent keys get a run, the answers of `x` (or `m`) in `answers`
 * (a bit per run of `order`, 0 for none) when `answers` is not NULL; compared with `expect`
 * when that is not NULL. */
static size_t ri_absent(const cksst_run_index *x, const cksst_mapped_run_index *m, size_t n,
                        const uint64_t *order, size_t n_order, uint64_t *answers,
                        const uint64_t *expect)
{
    uint64_t runs[CKSST_RUN_INDEX_MAX_RUNS];
    size_t i, j, count, hits = 0;
    for (i = 0; i < n; i++) {
        uint64_t bits = 0;
        hits += (size_t)ri_ask(x, m, key(&ak, i), ak.hashes[i], runs, &count);
        check_newest_first(runs, count, order, n_order);
        for (j = 0; j < n_order; j++) {
            bits |= (uint64_t)has_run(runs, count, order[j]) << j;
        }
        if (answers != NULL) {
            answers[i] = bits;
        }
        if (expect != NULL) {
            CHECKF(bits == expect[i], "absent key %zu: runs %llx, expected %llx", i,
                   (unsigned long long)bits, (unsigned long long)expect[i]);
        }
    }
    return hits;
}

/* One thread's lookups of a mapped run index (section 7): every key c i in [from, to) but
 * those with i % every == 0 must name `run`; the number that did not, returned. */
typedef struct {
    const cksst_mapped_run_index *m;
    uint64_t run;
    size_t from, to, every, lost;
} ri_thread_job;

static void *ri_thread(void *arg)
{
    ri_thread_job *job = arg;
    uint64_t runs[CKSST_RUN_INDEX_MAX_RUNS];
    size_t i, count, round;
    for (round = 0; round < 4; round++) {
        for (i = job->from; i < job->to; i++) {
            int rc;
            if (job->every != 0 && i % job->every == 0) {
                continue;
            }
            rc = cksst_mapped_run_index_runs_for_hash(job->m, ck.hashes[i], runs,
                                                      CKSST_RUN_INDEX_MAX_RUNS, &count);
            job->lost += rc != 1 || !has_run(runs, count, job->run);
        }
    }
    return NULL;
}

static void section_run_index(void)
{
    const size_t K = ri_keys, U = ri_updates, E = ri_every;
    const size_t n_absent = ak.n < 20000 ? ak.n : 20000;
    cksst_run_index *x = NULL, *back = NULL, *fresh = NULL;
    cksst_mapped_run_index *m = NULL;
    cksst_config cfg;
    uint64_t runs[CKSST_RUN_INDEX_MAX_RUNS], *hashes, *absent_answers;
    uint64_t order[4], digest;
    const uint8_t **kept_keys;
    size_t *kept_lens;
    size_t i, count, n_kept = 0, hits, len_before, file_len, n;
    uint8_t *bytes = NULL, *file;
    char path[4096];
    int rc;

    CHECK(ck.n >= 3 * K + K / 2 && K > U && E > 1);
    path_in(path, sizeof path, "c_run_index.cksst");

    /* Two flushes: run 10 from its keys, run 11 (newer) from its hashes, holding keys of its
     * own and U keys of run 10 again (updates). */
    set_context("run index: two flushes");
    CHECK_RC(cksst_config_init(&cfg, 4 * K), CKSST_OK);
    CHECK_RC(cksst_run_index_new(&cfg, &x), CKSST_OK);
    CHECK(cksst_run_index_run_count(x) == 0 && cksst_run_index_len(x) == 0);
    CHECK(cksst_run_index_size_in_bytes(x) > 0);
    CHECK(cksst_run_index_expected_fpr(x) >= 0.0 && cksst_run_index_expected_fpr(x) <= 0.01);
    CHECK_RC(cksst_run_index_runs_for(x, key(&ck, 0), KEY_LEN, runs, 4, &count), 0);
    CHECK(count == 0);
    CHECK_RC(cksst_run_index_add_run(x, 10, ck.ptrs, ck.lens, K), CKSST_OK);
    hashes = xmalloc((K + U) * sizeof *hashes);
    memcpy(hashes, ck.hashes + K, K * sizeof *hashes);
    memcpy(hashes + K, ck.hashes, U * sizeof *hashes);
    CHECK_RC(cksst_run_index_add_run_hashes(x, 11, hashes, K + U), CKSST_OK);
    free(hashes);
    order[0] = 11;
    order[1] = 10;
    check_runs(x, NULL, order, 2);
    CHECKF(cksst_run_index_len(x) > K && cksst_run_index_len(x) <= 2 * K + U, "%zu entries",
           cksst_run_index_len(x));
    /* No key lost, newest first: the updated keys are in both runs, 11 before 10. */
    check_run_keys(x, NULL, 10, 0, K, 0, order, 2);
    check_run_keys(x, NULL, 11, K, 2 * K, 0, order, 2);
    set_context("run index: the updated keys");
    for (i = 0; i < U; i++) {
        CHECK_RC(ri_ask(x, NULL, key(&ck, i), ck.hashes[i], runs, &count), 1);
        CHECKF(count == 2 && runs[0] == 11 && runs[1] == 10, "key c %zu: %zu runs", i, count);
    }
    /* In batches: keys in both runs, in one, in none (absent keys), and a batch of one. */
    set_context("run index: batches");
    ri_batch(x, NULL, &ck, 0, 2 * K, 1);
    ri_batch(x, NULL, &ak, 0, n_absent < 500 ? n_absent : 500, 1);
    ri_batch(x, NULL, &ck, 3, 4, 1);
    set_context("run index: %zu absent keys", n_absent);
    hits = ri_absent(x, NULL, n_absent, order, 2, NULL, NULL);
    CHECKF(hits * 100 <= n_absent * 3, "%zu of %zu absent keys got a run", hits, n_absent);

    /* A buffer too small: an error with the full count and the newest runs that fit, never a
     * shorter answer that looks complete. */
    set_context("run index: a buffer too small");
    runs[0] = runs[1] = 777;
    CHECK_ERR(cksst_run_index_runs_for(x, key(&ck, 0), KEY_LEN, runs, 1, &count),
              CKSST_ERR_BUFFER_TOO_SMALL);
    CHECK(count == 2 && runs[0] == 11 && runs[1] == 777);
    count = 99;
    CHECK_ERR(cksst_run_index_runs_for_hash(x, ck.hashes[0], NULL, 0, &count),
              CKSST_ERR_BUFFER_TOO_SMALL);
    CHECK(count == 2);
    /* With room for exactly the count (the retry), the answer. */
    CHECK_RC(cksst_run_index_runs_for_hash(x, ck.hashes[0], runs, 2, &count), 1);
    CHECK(count == 2 && runs[0] == 11 && runs[1] == 10);
    /* A key in no run needs no room. */
    for (i = 0; i < n_absent; i++) {
        if (cksst_run_index_runs_for(x, key(&ak, i), KEY_LEN, runs, 4, &count) == 0) {
            break;
        }
    }
    CHECK(i < n_absent);
    count = 99;
    CHECK_RC(cksst_run_index_runs_for(x, key(&ak, i), KEY_LEN, NULL, 0, &count), 0);
    CHECK(count == 0);
    runs[0] = 777;
    CHECK_ERR(cksst_run_index_runs(x, runs, 1, &count), CKSST_ERR_BUFFER_TOO_SMALL);
    CHECK(count == 2 && runs[0] == 11);

    /* Refused changes change nothing. */
    set_context("run index: refused changes");
    CHECK_ERR(cksst_run_index_add_run(x, 10, ck.ptrs, ck.lens, 1), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cksst_last_error(), "10") != NULL);
    CHECK_ERR(cksst_run_index_add_run_hashes(x, 11, NULL, 0), CKSST_ERR_INVALID_ARGUMENT);
    order[2] = 99;
    CHECK_ERR(cksst_run_index_compact_hashes(x, order + 1, 2, 12, NULL, 0),
              CKSST_ERR_INVALID_ARGUMENT); /* run 99 is not described */
    CHECK_ERR(cksst_run_index_compact_hashes(x, order, 2, 10, NULL, 0),
              CKSST_ERR_INVALID_ARGUMENT); /* into a run described */
    CHECK_ERR(cksst_run_index_compact_hashes(x, NULL, 0, 12, NULL, 0),
              CKSST_ERR_INVALID_ARGUMENT); /* nothing merged */
    check_runs(x, NULL, order, 2);
    check_run_keys(x, NULL, 10, 0, K, 0, order, 2);

    /* A third flush, then a compaction of 11 and 10 into 13 that drops every E-th key. */
    set_context("run index: a third flush and a compaction");
    CHECK_RC(cksst_run_index_add_run(x, 12, ck.ptrs + 2 * K, ck.lens + 2 * K, K / 2), CKSST_OK);
    kept_keys = xmalloc(2 * K * sizeof *kept_keys);
    kept_lens = xmalloc(2 * K * sizeof *kept_lens);
    for (i = 0; i < 2 * K; i++) {
        if (i % E != 0) {
            kept_keys[n_kept] = ck.ptrs[i];
            kept_lens[n_kept] = ck.lens[i];
            ++n_kept;
        }
    }
    order[0] = 11;
    order[1] = 10;
    CHECK_RC(cksst_run_index_compact(x, order, 2, 13, kept_keys, kept_lens, n_kept), CKSST_OK);
    free((void *)kept_keys);
    free(kept_lens);
    order[0] = 12;
    order[1] = 13;
    check_runs(x, NULL, order, 2);
    CHECK(cksst_run_index_len(x) <= n_kept + K / 2);
    check_run_keys(x, NULL, 13, 0, 2 * K, E, order, 2);
    check_run_keys(x, NULL, 12, 2 * K, 2 * K + K / 2, 0, order, 2);
    /* The dropped keys' entries were swept out: few still answer (false positives). */
    set_context("run index: the keys the compaction dropped");
    hits = 0;
    for (i = 0; i < 2 * K; i += E) {
        hits += (size_t)ri_ask(x, NULL, key(&ck, i), ck.hashes[i], runs, &count);
        check_newest_first(runs, count, order, 2);
    }
    CHECKF(hits * 10 <= 2 * K / E, "%zu of %zu dropped keys still answer", hits, 2 * K / E);

    /* Run 12 compacted alone into 14, from hashes, every key kept; then 14 dropped. */
    set_context("run index: a compaction from hashes, then a drop");
    order[0] = 12;
    CHECK_RC(cksst_run_index_compact_hashes(x, order, 1, 14, ck.hashes + 2 * K, K / 2), CKSST_OK);
    order[0] = 14;
    check_runs(x, NULL, order, 2);
    check_run_keys(x, NULL, 14, 2 * K, 2 * K + K / 2, 0, order, 2);
    len_before = cksst_run_index_len(x);
    CHECK_RC(cksst_run_index_drop_run(x, 14), 1);
    CHECK_RC(cksst_run_index_drop_run(x, 14), 0);
    CHECK_RC(cksst_run_index_drop_run(x, 12), 0);
    CHECK(cksst_run_index_len(x) < len_before);
    order[0] = 13;
    check_runs(x, NULL, order, 1);
    /* A dropped run is never answered. */
    for (i = 2 * K; i < 2 * K + K / 2; i++) {
        ri_ask(x, NULL, key(&ck, i), ck.hashes[i], runs, &count);
        CHECKF(!has_run(runs, count, 14) && !has_run(runs, count, 12), "key c %zu", i);
    }

    /* A flush after the drop: the index as it is saved, runs 15 and 13. */
    set_context("run index: describes, is_stale, the digest");
    CHECK_RC(cksst_run_index_add_run_hashes(x, 15, ck.hashes + 3 * K, K / 2), CKSST_OK);
    order[0] = 15;
    order[1] = 13;
    check_runs(x, NULL, order, 2);
    check_run_keys(x, NULL, 13, 0, 2 * K, E, order, 2);
    check_run_keys(x, NULL, 15, 3 * K, 3 * K + K / 2, 0, order, 2);
    order[2] = 15;
    CHECK_RC(cksst_run_index_describes(x, order + 1, 2), 0); /* 13, 15: the wrong order */
    CHECK_RC(cksst_run_index_describes(x, order, 1), 0);
    CHECK_RC(cksst_run_index_describes(x, order, 3), 0);
    CHECK_RC(cksst_run_index_describes(x, NULL, 0), 0);
    CHECK_RC(cksst_runs_digest_of(order + 1, 2, &digest), CKSST_OK);
    {
        uint64_t d = 0;
        CHECK_RC(cksst_run_index_runs_digest(x, &d), CKSST_OK);
        CHECK(d != digest);
        /* FORMAT.md §12.1: the empty run set's digest is XXH3-64 of no bytes. */
        CHECK_RC(cksst_runs_digest_of(NULL, 0, &d), CKSST_OK);
        CHECK(d == 0x2D06800538D394C2ULL);
    }
    absent_answers = xmalloc(n_absent * sizeof *absent_answers);
    ri_absent(x, NULL, n_absent, order, 2, absent_answers, NULL);

    /* Saved, mapped, read back: the same answers, every key of every run included. */
    set_context("run index: saved to c_run_index.cksst and mapped");
    CHECK_RC(cksst_run_index_save(x, path), CKSST_OK);
    CHECK_RC(cksst_run_index_to_bytes(x, &bytes, &n), CKSST_OK);
    file = read_file("c_run_index.cksst", &file_len);
    CHECK(n == file_len && memcmp(bytes, file, n) == 0 && memcmp(bytes, "CUCKORIX", 8) == 0);
    CHECK_RC(cksst_mapped_run_index_open(path, &m), CKSST_OK);
    check_runs(NULL, m, order, 2);
    CHECK(cksst_mapped_run_index_len(m) == cksst_run_index_len(x));
    CHECK(cksst_mapped_run_index_expected_fpr(m) == cksst_run_index_expected_fpr(x));
    check_run_keys(NULL, m, 13, 0, 2 * K, E, order, 2);
    check_run_keys(NULL, m, 15, 3 * K, 3 * K + K / 2, 0, order, 2);
    set_context("run index: the mapped file in batches");
    ri_batch(NULL, m, &ck, 0, 4 * K, 1);
    ri_batch(NULL, m, &ak, 0, n_absent < 500 ? n_absent : 500, 1);
    set_context("run index: the mapped file, every key as the owned index answers it");
    for (i = 0; i < 4 * K; i++) {
        uint64_t mine[CKSST_RUN_INDEX_MAX_RUNS];
        size_t n_mine;
        rc = ri_ask(x, NULL, key(&ck, i), ck.hashes[i], mine, &n_mine);
        CHECK_RC(ri_ask(NULL, m, key(&ck, i), ck.hashes[i], runs, &count), rc);
        CHECKF(count == n_mine && memcmp(runs, mine, count * sizeof *runs) == 0, "key c %zu", i);
    }
    ri_absent(NULL, m, n_absent, order, 2, NULL, absent_answers);
    /* Four threads asking the same mapped index at once (its chunks checked as they go). */
    set_context("run index: four threads on one mapped index");
    cksst_mapped_run_index_free(m);
    m = NULL;
    CHECK_RC(cksst_mapped_run_index_open(path, &m), CKSST_OK);
    {
        pthread_t t[4];
        ri_thread_job jobs[4];
        for (i = 0; i < 4; i++) {
            jobs[i].m = m;
            jobs[i].run = i % 2 == 0 ? 13 : 15;
            jobs[i].from = i % 2 == 0 ? 0 : 3 * K;
            jobs[i].to = i % 2 == 0 ? 2 * K : 3 * K + K / 2;
            jobs[i].every = i % 2 == 0 ? E : 0;
            jobs[i].lost = 0;
            CHECK(pthread_create(&t[i], NULL, ri_thread, &jobs[i]) == 0);
        }
        for (i = 0; i < 4; i++) {
            CHECK(pthread_join(t[i], NULL) == 0);
            CHECKF(jobs[i].lost == 0, "thread %zu: %zu lookups lost run %llu", i, jobs[i].lost,
                   (unsigned long long)jobs[i].run);
        }
    }
    CHECK_RC(cksst_mapped_run_index_verify(m), CKSST_OK);
    cksst_mapped_run_index_free(m);
    m = NULL;
    set_context("run index: read back from the file and from bytes");
    CHECK_RC(cksst_run_index_open(path, &back), CKSST_OK);
    check_runs(back, NULL, order, 2);
    check_run_keys(back, NULL, 13, 0, 2 * K, E, order, 2);
    ri_absent(back, NULL, n_absent, order, 2, NULL, absent_answers);
    cksst_run_index_free(back);
    back = NULL;
    CHECK_RC(cksst_run_index_from_bytes(file, file_len, &back), CKSST_OK);
    check_runs(back, NULL, order, 2);
    check_run_keys(back, NULL, 15, 3 * K, 3 * K + K / 2, 0, order, 2);
    ri_absent(back, NULL, n_absent, order, 2, NULL, absent_answers);
    /* Read back, it is updated as the index that was saved. */
    CHECK_RC(cksst_run_index_drop_run(back, 15), 1);
    check_runs(back, NULL, order + 1, 1);
    cksst_run_index_free(back);
    back = NULL;
    cksst_bytes_free(bytes, n);

    /* A damaged file: refused at open, or every lookup names every run that holds the key
     * (every run where a damaged chunk is read), and verify fails; read whole, refused. */
    {
        size_t at[] = {0, 8, 16, 30, 52, 72, 96, 124, 128, 136, 192, 0, 0, 0, 0};
        const size_t n_at = sizeof at / sizeof at[0];
        size_t d, opened = 0;
        at[n_at - 4] = 256;
        at[n_at - 3] = file_len / 2;
        at[n_at - 2] = file_len - 1;
        at[n_at - 1] = file_len; /* a byte appended */
        CHECK(file_len > 512);
        for (d = 0; d < n_at + 1; d++) {
            size_t dlen = file_len;
            uint8_t *damaged = xmalloc(file_len + 1);
            memcpy(damaged, file, file_len);
            if (d == n_at) {
                dlen = file_len - 1; /* cut short */
            } else if (at[d] == file_len) {
                damaged[file_len] = 0;
                dlen = file_len + 1;
            } else {
                damaged[at[d]] ^= 0x10;
            }
            set_context("run index: damaged at byte %zu (length %zu of %zu)",
                        d < n_at ? at[d] : file_len, dlen, file_len);
            back = (cksst_run_index *)&checks;
            CHECK_FAILS(cksst_run_index_from_bytes(damaged, dlen, &back));
            CHECK(back == NULL);
            write_file("c_run_index_damaged.cksst", damaged, dlen);
            free(damaged);
            {
                char dpath[4096];
                path_in(dpath, sizeof dpath, "c_run_index_damaged.cksst");
                m = (cksst_mapped_run_index *)&checks;
                rc = cksst_mapped_run_index_open(dpath, &m);
            }
            if (rc != CKSST_OK) {
                CHECKF(rc < 0 && rc != CKSST_ERR_INTERNAL, "open: %d", rc);
                CHECK(m == NULL);
                continue;
            }
            ++opened;
            /* Opened: the damage is in the buckets. No key is lost. */
            check_run_keys(NULL, m, 13, 0, 2 * K, E, order, 2);
            check_run_keys(NULL, m, 15, 3 * K, 3 * K + K / 2, 0, order, 2);
            CHECK_FAILS(cksst_mapped_run_index_verify(m));
            check_run_keys(NULL, m, 13, 0, 2 * K, E, order, 2);
            cksst_mapped_run_index_free(m);
            m = NULL;
        }
        /* The damage in the buckets (the middle, the last byte) opens. */
        CHECKF(opened >= 2, "%zu damaged files opened", opened);
    }
    free(file);
    free(absent_answers);
    cksst_run_index_free(x);
    x = NULL;

    /* At most CKSST_RUN_INDEX_MAX_RUNS runs; a buffer of that many always holds the answer. */
    set_context("run index: %d runs", CKSST_RUN_INDEX_MAX_RUNS);
    CHECK_RC(cksst_run_index_new(NULL, &fresh), CKSST_OK);
    for (i = 0; i < CKSST_RUN_INDEX_MAX_RUNS; i++) {
        /* Run i holds key c i + 1, and key c 0: a key may be in every run (its runs past two
         * in its stash record). */
        const uint8_t *two[2];
        size_t lens2[2] = {KEY_LEN, KEY_LEN};
        two[0] = key(&ck, i + 1);
        two[1] = key(&ck, 0);
        CHECK_RC(cksst_run_index_add_run(fresh, 1000 + i, two, lens2, 2), CKSST_OK);
    }
    CHECK_ERR(cksst_run_index_add_run(fresh, 5000, NULL, NULL, 0), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(cksst_run_index_run_count(fresh) == CKSST_RUN_INDEX_MAX_RUNS);
    CHECK_RC(cksst_run_index_runs(fresh, runs, CKSST_RUN_INDEX_MAX_RUNS, &count), CKSST_OK);
    CHECK(count == CKSST_RUN_INDEX_MAX_RUNS);
    for (i = 0; i < count; i++) {
        CHECKF(runs[i] == 1000 + CKSST_RUN_INDEX_MAX_RUNS - 1 - i, "run %zu: %llu", i,
               (unsigned long long)runs[i]);
    }
    CHECK_RC(cksst_run_index_runs_for(fresh, key(&ck, 0), KEY_LEN, runs, CKSST_RUN_INDEX_MAX_RUNS,
                                      &count), 1);
    /* Every run, newest first. */
    CHECKF(count == CKSST_RUN_INDEX_MAX_RUNS, "%zu runs", count);
    for (i = 0; i < CKSST_RUN_INDEX_MAX_RUNS; i++) {
        CHECKF(has_run(runs, count, 1000 + i), "run %zu", 1000 + i);
    }
    {
        uint64_t all[CKSST_RUN_INDEX_MAX_RUNS];
        size_t n_all;
        CHECK_RC(cksst_run_index_runs(fresh, all, CKSST_RUN_INDEX_MAX_RUNS, &n_all), CKSST_OK);
        check_newest_first(runs, count, all, n_all);
    }
    for (i = 0; i < CKSST_RUN_INDEX_MAX_RUNS; i++) {
        CHECK_RC(ri_ask(fresh, NULL, key(&ck, i + 1), ck.hashes[i + 1], runs, &count), 1);
        CHECKF(has_run(runs, count, 1000 + i), "key c %zu", i + 1);
    }
    /* A compaction with every id in use: the merged runs' place goes to `into`. */
    {
        uint64_t merged[2] = {1000 + CKSST_RUN_INDEX_MAX_RUNS - 1, 1000 + CKSST_RUN_INDEX_MAX_RUNS - 2};
        uint64_t keep[2];
        keep[0] = ck.hashes[CKSST_RUN_INDEX_MAX_RUNS];
        keep[1] = ck.hashes[CKSST_RUN_INDEX_MAX_RUNS - 1];
        CHECK_RC(cksst_run_index_compact_hashes(fresh, merged, 2, 7000, keep, 2), CKSST_OK);
        CHECK(cksst_run_index_run_count(fresh) == CKSST_RUN_INDEX_MAX_RUNS - 1);
        CHECK_RC(cksst_run_index_runs(fresh, runs, CKSST_RUN_INDEX_MAX_RUNS, &count), CKSST_OK);
        CHECK(count == CKSST_RUN_INDEX_MAX_RUNS - 1 && runs[0] == 7000);
        for (i = 0; i < 2; i++) {
            size_t c;
            uint64_t r[CKSST_RUN_INDEX_MAX_RUNS];
            CHECK_RC(cksst_run_index_runs_for_hash(fresh, keep[i], r, CKSST_RUN_INDEX_MAX_RUNS, &c),
                     1);
            CHECKF(has_run(r, c, 7000) && r[0] == 7000, "kept key %zu", i);
        }
    }
    cksst_run_index_free(fresh);
    fresh = NULL;

    /* NULL handles and pointers, foreign files; failed opens leave NULL. */
    set_context("run index: NULL arguments and foreign files");
    cksst_run_index_free(NULL);
    cksst_mapped_run_index_free(NULL);
    CHECK_ERR(cksst_run_index_new(NULL, NULL), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_run_index_open(NULL, &back), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_run_index_open(path, NULL), CKSST_ERR_INVALID_ARGUMENT);
    back = (cksst_run_index *)&checks;
    CHECK_ERR(cksst_run_index_from_bytes(NULL, 5, &back), CKSST_ERR_INVALID_ARGUMENT);
    CHECK(back == NULL);
    CHECK_ERR(cksst_mapped_run_index_open(NULL, &m), CKSST_ERR_INVALID_ARGUMENT);
    CHECK_ERR(cksst_mapped_run_index_open(path, NULL), CKSST_ERR_INVALID_ARGUMENT);
    {
        char other[4096];
        path_in(other, sizeof other, singles[0].file);
        m = (cksst_mapped_run_index *)&checks;
        CHECK_ERR(cksst_mapped_run_index_open(other, &m), CKSST_ERR_BAD_MAGIC);
        CHECK(m == NULL);
        CHECK_ERR(cksst_run_index_open(other, &back), CKSST_ERR_BAD_MAGIC);
        CHECK_ERR(cksst_run_index_from_bytes(growable.bytes, growable.len, &back),
                  CKSST_ERR_BAD_MAGIC);
        path_in(other, sizeof other, "no such run index");
        CHECK_ERR(cksst_mapped_run_index_open(other, &m), CKSST_ERR_IO);
        CHECK_ERR(cksst_run_index_open(other, &back), CKSST_ERR_IO);
        CHECK(m == NULL && back == NULL);
    }
    /* (Its own file: c_run_index.cksst stays for the driver.) */
    path_in(path, sizeof path, "c_run_index_small.cksst");
    CHECK_RC(cksst_run_index_new(NULL, &x), CKSST_OK);
    CHECK_RC(cksst_run_index_add_run(x, 1, ck.ptrs, ck.lens, 2), CKSST_OK);
    CHECK_RC(cksst_run_index_save(x, path), CKSST_OK);
    CHECK_RC(cksst_mapped_run_index_open(path, &m), CKSST_OK);
    {
        const uint8_t *bad_keys[2];
        size_t bad_lens[2] = {KEY_LEN, 5};
        uint64_t one = 1, d = 7;
        bad_keys[0] = key(&ck, 5);
        bad_keys[1] = NULL;
        CHECK_ERR(cksst_run_index_add_run(NULL, 2, ck.ptrs, ck.lens, 1),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK(strstr(cksst_last_error(), "index") != NULL);
        CHECK_ERR(cksst_run_index_add_run(x, 2, NULL, ck.lens, 1), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_add_run(x, 2, ck.ptrs, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_add_run(x, 2, bad_keys, bad_lens, 2), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_add_run_hashes(NULL, 2, ck.hashes, 1),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_add_run_hashes(x, 2, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_compact(NULL, &one, 1, 3, ck.ptrs, ck.lens, 1),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_compact(x, NULL, 1, 3, ck.ptrs, ck.lens, 1),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_compact(x, &one, 1, 3, bad_keys, bad_lens, 2),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_compact_hashes(NULL, &one, 1, 3, ck.hashes, 1),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_compact_hashes(x, &one, 1, 3, NULL, 1),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_drop_run(NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
        /* None of those changed the index. */
        CHECK(cksst_run_index_run_count(x) == 1);
        check_runs(x, NULL, &one, 1);
        check_run_keys(x, NULL, 1, 0, 2, 0, &one, 1);

        count = 99;
        CHECK_ERR(cksst_run_index_runs_for(NULL, key(&ck, 0), KEY_LEN, runs, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK(count == 0);
        CHECK_ERR(cksst_run_index_runs_for(x, NULL, 3, runs, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs_for(x, key(&ck, 0), KEY_LEN, NULL, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs_for(x, key(&ck, 0), KEY_LEN, runs, 4, NULL),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs_for_hash(NULL, ck.hashes[0], runs, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs_for_hash(x, ck.hashes[0], NULL, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs_for_hash(x, ck.hashes[0], runs, 4, NULL),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs(NULL, runs, 4, &count), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs(x, NULL, 4, &count), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs(x, runs, 4, NULL), CKSST_ERR_INVALID_ARGUMENT);
        CHECK(cksst_run_index_run_count(NULL) == 0);
        CHECK(cksst_run_index_len(NULL) == 0);
        CHECK(cksst_run_index_size_in_bytes(NULL) == 0);
        CHECK(cksst_run_index_expected_fpr(NULL) == 1.0);
        CHECK_ERR(cksst_run_index_describes(NULL, &one, 1), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_describes(x, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_is_stale(NULL), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs_digest(NULL, &d), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_runs_digest(x, NULL), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_runs_digest_of(NULL, 1, &d), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_runs_digest_of(&one, 1, NULL), CKSST_ERR_INVALID_ARGUMENT);
        CHECK(d == 7);
        CHECK_ERR(cksst_run_index_save(NULL, path), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_save(x, NULL), CKSST_ERR_INVALID_ARGUMENT);
        bytes = (uint8_t *)&checks;
        n = 5;
        CHECK_ERR(cksst_run_index_to_bytes(NULL, &bytes, &n), CKSST_ERR_INVALID_ARGUMENT);
        CHECK(bytes == NULL && n == 0);
        CHECK_ERR(cksst_run_index_to_bytes(x, NULL, &n), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_run_index_to_bytes(x, &bytes, NULL), CKSST_ERR_INVALID_ARGUMENT);

        CHECK_ERR(cksst_mapped_run_index_verify(NULL), CKSST_ERR_INVALID_ARGUMENT);
        count = 99;
        CHECK_ERR(cksst_mapped_run_index_runs_for(NULL, key(&ck, 0), KEY_LEN, runs, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK(count == 0);
        CHECK_ERR(cksst_mapped_run_index_runs_for(m, NULL, 3, runs, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_for(m, key(&ck, 0), KEY_LEN, NULL, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_for(m, key(&ck, 0), KEY_LEN, runs, 4, NULL),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_for_hash(NULL, ck.hashes[0], runs, 4, &count),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_for_hash(m, ck.hashes[0], runs, 4, NULL),
                  CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_for_hash(m, ck.hashes[0], runs, 0, &count),
                  CKSST_ERR_BUFFER_TOO_SMALL);
        CHECK(count == 1);
        CHECK_ERR(cksst_mapped_run_index_runs(NULL, runs, 4, &count), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs(m, NULL, 4, &count), CKSST_ERR_INVALID_ARGUMENT);
        CHECK(cksst_mapped_run_index_run_count(NULL) == 0);
        CHECK(cksst_mapped_run_index_len(NULL) == 0);
        CHECK(cksst_mapped_run_index_expected_fpr(NULL) == 1.0);
        CHECK_ERR(cksst_mapped_run_index_describes(NULL, &one, 1), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_describes(m, NULL, 1), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_is_stale(NULL), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_digest(NULL, &d), CKSST_ERR_INVALID_ARGUMENT);
        CHECK_ERR(cksst_mapped_run_index_runs_digest(m, NULL), CKSST_ERR_INVALID_ARGUMENT);
        check_runs(NULL, m, &one, 1);
        check_run_keys(NULL, m, 1, 0, 2, 0, &one, 1);
    }
    cksst_mapped_run_index_free(m);
    cksst_run_index_free(x);
}

/* ------------------------------------------------------------------------------------------ */

/* Runs one section and reports how many checks it made. */
static void section(const char *name, void (*run)(void))
{
    unsigned long long before = checks;
    run();
    context[0] = '\0';
    printf("  %s: %llu checks\n", name, checks - before);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t k, max_keys = 0, max_absent = 0, longest;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (the fixtures of capi/tests/c_suite.rs)\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    keep_going = getenv("CKSST_SUITE_KEEP_GOING") != NULL;
    /* No call has failed yet on this thread. */
    CHECK(cksst_last_error() != NULL && cksst_last_error()[0] == '\0');

    read_manifest();
    for (k = 0; k < n_singles; k++) {
        load_fixture(&singles[k]);
        if (singles[k].keys > max_keys) {
            max_keys = singles[k].keys;
        }
        if (singles[k].absent > max_absent) {
            max_absent = singles[k].absent;
        }
    }
    load_fixture(&growable);
    if (growable.keys > max_keys) {
        max_keys = growable.keys;
    }
    if (growable.absent > max_absent) {
        max_absent = growable.absent;
    }
    keyset_make(&pk, 'p', max_keys);
    keyset_make(&ak, 'a', max_absent);
    keyset_make(&ck, 'c', grow_inserts + grow_unique);
    longest = max_keys > max_absent ? max_keys : max_absent;
    out = xmalloc(longest * sizeof *out);
    printf("suite.c: cuckoo-sst %s, %zu single filters, a growable filter of %zu levels, "
           "%zu present keys, %zu absent keys\n",
           cksst_version(), n_singles, growable_levels, max_keys, max_absent);

    printf("  setup (manifest, answers, keys): %llu checks\n", checks);
    section("0. hashing, status names, version", section_basics);
    section("0b. the last error, per thread", section_threads);
    section("1. single filters: views at any address, mapped, lazy, ranges", section_singles);
    section("2. view sets", section_set);
    section("3. growable filters", section_growable);
    section("4. builders and compact blocks", section_builder);
    section("5a. bad input: NULL handles and pointers", section_null_arguments);
    section("5b. bad input: truncated, damaged, foreign and missing files", section_bad_bytes);
    section("5c. bad input: impossible configurations", section_bad_config);
    section("6. failure paths (issue 40's review)", section_review);
    section("7. the run index: flushes, lookups, compactions, drops, files", section_run_index);

    free(out);
    keyset_free(&pk);
    keyset_free(&ak);
    keyset_free(&ck);
    for (k = 0; k < n_singles; k++) {
        free(singles[k].bytes);
        free(singles[k].answers);
    }
    free(growable.bytes);
    free(growable.answers);
    if (failed > 0) {
        printf("suite.c: %llu of %llu checks failed\n", failed, checks);
        return 1;
    }
    printf("suite.c: all %llu checks passed\n", checks);
    return 0;
}
