/*
 * cksst_leveldb.c: LevelDB filter policies over cuckoo-sst's C ABI — the cuckoo policy
 * (compact blocks) and a counting clone of LevelDB's built-in Bloom filter. See
 * cksst_leveldb.h. C99; builds warning-free with -Wall -Wextra -Werror.
 */

#include "cksst_leveldb.h"

#include <stdlib.h>

#include "cuckoo_sst.h"

/* ------------------------------------------------------------------------------------------
 * Counters */

#if CKSST_LEVELDB_STATS_ATOMIC
#define STAT_ADD(field, v) ((void)__atomic_fetch_add(&(field), (uint64_t)(v), __ATOMIC_RELAXED))
#define STAT_LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define STAT_STORE(field, v) __atomic_store_n(&(field), (uint64_t)(v), __ATOMIC_RELAXED)
#else
/* Never called from count_build and count_match, which count nothing without atomic
 * operations (LevelDB calls key_may_match from every reader thread: plain increments would
 * race); loading and resetting a block nobody writes is safe. */
#define STAT_ADD(field, v) ((void)((field) += (uint64_t)(v)))
#define STAT_LOAD(field) (field)
#define STAT_STORE(field, v) ((void)((field) = (uint64_t)(v)))
#endif

void cksst_leveldb_stats_load(const cksst_leveldb_stats *stats, cksst_leveldb_stats *out) {
  if (stats == NULL || out == NULL) {
    return;
  }
  out->filters = STAT_LOAD(stats->filters);
  out->filter_keys = STAT_LOAD(stats->filter_keys);
  out->filter_bytes = STAT_LOAD(stats->filter_bytes);
  out->build_errors = STAT_LOAD(stats->build_errors);
  out->lookups = STAT_LOAD(stats->lookups);
  out->maybe = STAT_LOAD(stats->maybe);
  out->refused = STAT_LOAD(stats->refused);
}

void cksst_leveldb_stats_reset(cksst_leveldb_stats *stats) {
  if (stats == NULL) {
    return;
  }
  STAT_STORE(stats->filters, 0);
  STAT_STORE(stats->filter_keys, 0);
  STAT_STORE(stats->filter_bytes, 0);
  STAT_STORE(stats->build_errors, 0);
  STAT_STORE(stats->lookups, 0);
  STAT_STORE(stats->maybe, 0);
  STAT_STORE(stats->refused, 0);
}

/* A policy's state: where it counts (NULL: nowhere) and, for the Bloom clone, its
 * parameters. Freed by the destructor LevelDB calls from leveldb_filterpolicy_destroy. */
typedef struct policy_state {
  cksst_leveldb_stats *stats;
  size_t bits_per_key;
  size_t probes;
} policy_state;

static void destroy_state(void *state) { free(state); }

static void count_build(const policy_state *p, int n, size_t len, int built) {
  if (p->stats == NULL || !CKSST_LEVELDB_STATS_ATOMIC) {
    return;
  }
  STAT_ADD(p->stats->filters, 1);
  STAT_ADD(p->stats->filter_keys, n > 0 ? (uint64_t)n : 0);
  STAT_ADD(p->stats->filter_bytes, len);
  if (!built) {
    STAT_ADD(p->stats->build_errors, 1);
  }
}

static void count_match(const policy_state *p, uint8_t maybe, int refused) {
  if (p->stats == NULL || !CKSST_LEVELDB_STATS_ATOMIC) {
    return;
  }
  STAT_ADD(p->stats->lookups, 1);
  if (maybe) {
    STAT_ADD(p->stats->maybe, 1);
  }
  if (refused) {
    STAT_ADD(p->stats->refused, 1);
  }
}

/* ------------------------------------------------------------------------------------------
 * The cuckoo policy */

/* The fallback filter: one byte that is not a compact block (see cksst_leveldb.h). */
static char *fallback(size_t *len) {
  char *out = (char *)malloc(1);
  if (out == NULL) {
    *len = 0;
    return NULL;
  }
  out[0] = (char)CKSST_LEVELDB_FALLBACK_BYTE;
  *len = 1;
  return out;
}

char *cksst_leveldb_compact_build(const char *const *keys, const size_t *lens, int n,
                                  size_t *len, int *built) {
  /* One call into a buffer of the bound the header gives for a default block (16 + 2n
   * bytes: about 9 bits a key); a second, of the length the first reported, only if it did
   * not fit (never, for the default layout). A builder made, fed key by key and freed
   * cost more than the block's placement at LevelDB's few dozen keys a block. */
  size_t count = (size_t)(n > 0 ? n : 0);
  size_t bound = 16 + 2 * count;
  size_t got = 0;
  char *out = (char *)malloc(bound);
  int rc = CKSST_ERR_OUT_OF_MEMORY;

  if (out != NULL) {
    rc = cksst_compact_build_into((const uint8_t *const *)keys, lens, count, (uint8_t *)out,
                                  bound, &got);
    if (rc == CKSST_ERR_BUFFER_TOO_SMALL && got > bound) {
      char *bigger = (char *)realloc(out, got);
      size_t need = got;
      rc = CKSST_ERR_OUT_OF_MEMORY;
      if (bigger != NULL) {
        out = bigger;
        rc = cksst_compact_build_into((const uint8_t *const *)keys, lens, count,
                                      (uint8_t *)out, need, &got);
        if (rc == CKSST_OK && got != need) {
          rc = CKSST_ERR_INTERNAL; /* the same keys made another block: a bug */
        }
      }
    }
  }
  if (rc != CKSST_OK || got == 0) {
    free(out);
    if (built != NULL) {
      *built = 0;
    }
    return fallback(len);
  }
  if (built != NULL) {
    *built = 1;
  }
  *len = got;
  return out;
}

uint8_t cksst_leveldb_compact_may_match(const char *key, size_t key_len, const char *filter,
                                        size_t filter_len, int *refused) {
  int r = cksst_compact_contains((const uint8_t *)filter, filter_len, (const uint8_t *)key,
                                 key_len);
  if (refused != NULL) {
    *refused = r < 0;
  }
  /* 1 (maybe) and every error: read the table. Only an exact 0 skips it. */
  return r != 0;
}

static char *compact_create(void *state, const char *const *keys, const size_t *lens, int n,
                            size_t *len) {
  int built = 0;
  char *out = cksst_leveldb_compact_build(keys, lens, n, len, &built);
  count_build((const policy_state *)state, n, *len, built);
  return out;
}

static uint8_t compact_match(void *state, const char *key, size_t key_len, const char *filter,
                             size_t filter_len) {
  int refused = 0;
  uint8_t maybe = cksst_leveldb_compact_may_match(key, key_len, filter, filter_len, &refused);
  count_match((const policy_state *)state, maybe, refused);
  return maybe;
}

static const char *compact_name(void *state) {
  (void)state;
  return CKSST_LEVELDB_POLICY_NAME;
}

leveldb_filterpolicy_t *cksst_leveldb_policy_create(cksst_leveldb_stats *stats) {
  leveldb_filterpolicy_t *policy;
  policy_state *p = (policy_state *)calloc(1, sizeof *p);
  if (p == NULL) {
    return NULL;
  }
  p->stats = stats;
  policy = leveldb_filterpolicy_create(p, destroy_state, compact_create, compact_match,
                                       compact_name);
  if (policy == NULL) {
    free(p);
  }
  return policy;
}

void cksst_leveldb_policy_destroy(leveldb_filterpolicy_t *policy) {
  if (policy != NULL) {
    leveldb_filterpolicy_destroy(policy);
  }
}

/* ------------------------------------------------------------------------------------------
 * The Bloom clone: LevelDB 1.23's util/bloom.cc and util/hash.cc, transcribed. */

static uint32_t decode_fixed32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

/* util/hash.cc: Hash (similar to murmur hash). */
static uint32_t leveldb_hash(const char *data, size_t n, uint32_t seed) {
  const uint32_t m = 0xc6a4a793u;
  const uint32_t r = 24;
  const unsigned char *p = (const unsigned char *)data;
  const unsigned char *limit = p + n;
  uint32_t h = seed ^ (uint32_t)(n * m);

  while (limit - p >= 4) {
    uint32_t w = decode_fixed32(p);
    p += 4;
    h += w;
    h *= m;
    h ^= (h >> 16);
  }

  switch (limit - p) {
    case 3:
      h += (uint32_t)p[2] << 16;
      /* fall through */
    case 2:
      h += (uint32_t)p[1] << 8;
      /* fall through */
    case 1:
      h += (uint32_t)p[0];
      h *= m;
      h ^= (h >> r);
      break;
    default:
      break;
  }
  return h;
}

static uint32_t bloom_hash(const char *key, size_t len) {
  return leveldb_hash(key, len, 0xbc9f1d34u);
}

static char *bloom_create(void *state, const char *const *keys, const size_t *lens, int n,
                          size_t *len) {
  const policy_state *p = (const policy_state *)state;
  size_t bits = (size_t)(n > 0 ? n : 0) * p->bits_per_key;
  size_t bytes;
  unsigned char *array;
  int i;
  size_t j;

  /* For small n, enforce a minimum length (as LevelDB does). */
  if (bits < 64) {
    bits = 64;
  }
  bytes = (bits + 7) / 8;
  bits = bytes * 8;

  array = (unsigned char *)calloc(bytes + 1, 1);
  if (array == NULL) {
    /* LevelDB would throw std::bad_alloc here. An empty filter answers "maybe" from this
     * clone's key_may_match (the built-in would answer "absent"). */
    *len = 0;
    count_build(p, n, 0, 0);
    return NULL;
  }
  array[bytes] = (unsigned char)p->probes; /* Remember the number of probes in the filter. */
  for (i = 0; i < n; i++) {
    /* Double hashing [Kirsch, Mitzenmacher 2006]. */
    uint32_t h = bloom_hash(keys[i], lens[i]);
    const uint32_t delta = (h >> 17) | (h << 15); /* Rotate right 17 bits. */
    for (j = 0; j < p->probes; j++) {
      const uint32_t bitpos = (uint32_t)(h % bits);
      array[bitpos / 8] |= (unsigned char)(1u << (bitpos % 8));
      h += delta;
    }
  }
  *len = bytes + 1;
  count_build(p, n, *len, 1);
  return (char *)array;
}

static uint8_t bloom_may_match(const char *key, size_t key_len, const char *filter,
                               size_t filter_len) {
  const unsigned char *array = (const unsigned char *)filter;
  size_t bits;
  size_t k;
  uint32_t h;
  uint32_t delta;
  size_t j;

  if (filter_len < 2) {
    return 1; /* LevelDB: "absent"; never written by either (see cksst_leveldb.h). */
  }
  bits = (filter_len - 1) * 8;
  k = array[filter_len - 1];
  if (k > 30) {
    /* Reserved for other encodings of short Bloom filters: a match. (LevelDB reads the byte
     * as a signed char; 128..255 then become huge and take this branch too.) */
    return 1;
  }
  h = bloom_hash(key, key_len);
  delta = (h >> 17) | (h << 15);
  for (j = 0; j < k; j++) {
    /* Like LevelDB (uint32_t bitpos = h % bits, bits a size_t). */
    const uint32_t bitpos = (uint32_t)(h % bits);
    if ((array[bitpos / 8] & (1u << (bitpos % 8))) == 0) {
      return 0;
    }
    h += delta;
  }
  return 1;
}

static uint8_t bloom_match(void *state, const char *key, size_t key_len, const char *filter,
                           size_t filter_len) {
  uint8_t maybe = bloom_may_match(key, key_len, filter, filter_len);
  count_match((const policy_state *)state, maybe, 0);
  return maybe;
}

static const char *bloom_name(void *state) {
  (void)state;
  return CKSST_LEVELDB_BLOOM_NAME;
}

leveldb_filterpolicy_t *cksst_leveldb_bloom_policy_create(int bits_per_key,
                                                          cksst_leveldb_stats *stats) {
  leveldb_filterpolicy_t *policy;
  policy_state *p;
  size_t probes;

  if (bits_per_key < 0 || bits_per_key > 1000) {
    return NULL;
  }
  /* LevelDB rounds down to reduce the probing cost a little (0.69 =~ ln 2). */
  probes = (size_t)(bits_per_key * 0.69);
  if (probes < 1) {
    probes = 1;
  }
  if (probes > 30) {
    probes = 30;
  }
  p = (policy_state *)calloc(1, sizeof *p);
  if (p == NULL) {
    return NULL;
  }
  p->stats = stats;
  p->bits_per_key = (size_t)bits_per_key;
  p->probes = probes;
  policy = leveldb_filterpolicy_create(p, destroy_state, bloom_create, bloom_match, bloom_name);
  if (policy == NULL) {
    free(p);
  }
  return policy;
}
