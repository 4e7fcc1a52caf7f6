/*
 * cksst_leveldb.h: a LevelDB filter policy that stores cuckoo-sst compact blocks (FORMAT.md
 * §11), built on LevelDB's C API (leveldb/c.h) and cuckoo-sst's C ABI (cuckoo_sst.h).
 *
 *     cksst_leveldb_stats stats = {0};                       // optional: NULL is allowed
 *     leveldb_filterpolicy_t *policy = cksst_leveldb_policy_create(&stats);
 *     leveldb_options_set_filter_policy(options, policy);
 *     ... open, use and close every database opened with these options ...
 *     cksst_leveldb_policy_destroy(policy);
 *
 * LevelDB builds one filter per 2 KiB of data-block offsets (FilterBlockBuilder's base_lg 11):
 * in practice one filter for the keys of each data block (about 4 KiB, a few dozen keys), and
 * an empty filter offset between them that no lookup asks. Each of our filters is one compact
 * block (compact version 2 since 2026-11-28, FORMAT.md §11.5; version-1 blocks of older
 * tables still read): two header bytes and the buckets its keys need, with a 4-bit check over
 * the header and the length but no checksum of the buckets — LevelDB checks the filter
 * block's CRC-32C when the database is opened with paranoid_checks (see "Damage" below).
 *
 * The policy does not own anything LevelDB uses: it must outlive every database opened with
 * it, and the stats (if given) must outlive the policy.
 *
 * Link with this file's object, -lcuckoo_sst_c (or the Rust crate cuckoo-sst-c's rlib) and
 * -lleveldb. C99.
 */

#ifndef CKSST_LEVELDB_H
#define CKSST_LEVELDB_H

#include <stddef.h>
#include <stdint.h>

#include <leveldb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The policy's name, which LevelDB stores in each table ("filter." + name in the metaindex)
 * and looks up when it opens one: a table whose filter was written under another name is read
 * without a filter. So the name stays as it is for good, ".v1" included (it was the compact
 * version when the name was chosen, and is now only part of the name): a later compact-block
 * version is told apart by the low nibble of each block's magic byte, which a reader that does
 * not know it refuses ("maybe", no key lost), and a policy that writes it still reads every
 * table written before. A new name would make LevelDB ignore the filters of every existing
 * table until compactions rewrote it. */
#define CKSST_LEVELDB_POLICY_NAME "cuckoo-sst.compact.v1"

/* The name of LevelDB's built-in Bloom filter, which cksst_leveldb_bloom_policy_create's
 * clone uses too: the clone and the built-in read each other's tables. */
#define CKSST_LEVELDB_BLOOM_NAME "leveldb.BuiltinBloomFilter2"

/* The filter the cuckoo policy stores when it cannot build one (an error of the builder, or
 * memory it could not have: the C ABI reports out of memory as an error, never an abort):
 * this single byte, which is not a compact block (its magic
 * nibble is not 0xC and it is shorter than a header), so cksst_compact_contains refuses it
 * and every lookup answers "maybe": the data block is read, no key is lost. If even that byte
 * cannot be allocated the filter is empty (length 0), which the policy's key_may_match refuses
 * the same way. */
#define CKSST_LEVELDB_FALLBACK_BYTE 0x00

/* 1 when the counters below are updated with atomic operations (GCC and Clang: relaxed
 * __atomic builtins), so that LevelDB's threads (its compaction thread building filters, any
 * number of readers matching keys) may share one stats block. 0 with a compiler that lacks
 * them, or with CKSST_LEVELDB_NO_ATOMIC_BUILTINS defined when cksst_leveldb.c is compiled (the
 * tests use it to be such a compiler): the policies then count nothing, and a stats block
 * stays as it was given, since plain increments from LevelDB's reader threads would race. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(CKSST_LEVELDB_NO_ATOMIC_BUILTINS)
#define CKSST_LEVELDB_STATS_ATOMIC 1
#else
#define CKSST_LEVELDB_STATS_ATOMIC 0
#endif

/* Counters of a policy's work, for measuring its false-positive rate and size (counted only
 * where CKSST_LEVELDB_STATS_ATOMIC is 1). Zero it before use (or call
 * cksst_leveldb_stats_reset); read it with cksst_leveldb_stats_load while the database runs
 * (each counter is read atomically; the set is not one consistent snapshot). */
typedef struct cksst_leveldb_stats {
  /* create_filter calls: filters built (LevelDB skips its empty filters). */
  uint64_t filters;
  /* Keys given to them, duplicates included (LevelDB passes every version of a user key). */
  uint64_t filter_keys;
  /* Bytes of the filters returned. */
  uint64_t filter_bytes;
  /* Filters that fell back to CKSST_LEVELDB_FALLBACK_BYTE (always "maybe"). */
  uint64_t build_errors;
  /* key_may_match calls: one per table whose filter a Get consulted. */
  uint64_t lookups;
  /* Of those, the ones answered "maybe" (1): the data block is then read. */
  uint64_t maybe;
  /* Of those, the ones whose filter the reader refused (cksst_compact_contains < 0: not a
   * compact block, a damaged header, the fallback byte), answered "maybe". Always 0 for the
   * Bloom clone. */
  uint64_t refused;
} cksst_leveldb_stats;

/* The cuckoo policy: create_filter builds a compact block of the keys with a cksst_builder
 * (default configuration: 1 % target false-positive rate, semi-sorted buckets of 4, 10-bit
 * fingerprints); key_may_match answers 0 only when cksst_compact_contains says 0, "maybe" (1)
 * for 1 and for every error. `stats` is NULL or a zeroed block the policy counts into; it
 * must outlive the policy.
 *
 * Keys are hashed as the bytes LevelDB passes (the user keys). A comparator that treats
 * different bytes as the same key (case-insensitive keys, say) needs a filter policy that
 * hashes every spelling of a key alike, as LevelDB's documentation says of its Bloom filter:
 * with this one, a lookup of one spelling answers "absent" for a key stored under another. NULL if memory cannot be had. Release with
 * cksst_leveldb_policy_destroy after the last database using it is closed.
 *
 * Damage. With paranoid_checks, LevelDB checks the filter block's CRC-32C when it opens a
 * table (table.cc, ReadFilter: `if (rep_->options.paranoid_checks) opt.verify_checksums =
 * true;`) and drops a block that fails: that table is read without a filter and every key is
 * found, whatever bytes were damaged on disk (not bytes damaged in memory after the open).
 * Without paranoid_checks nothing checks the filter block. key_may_match refuses a compact
 * block — "maybe", every lookup of that block reads the data block — when the damage breaks
 * one of its rules (FORMAT.md §11.2 steps 1-6, §11.5 steps 1-5): shorter than its header, a
 * wrong magic or version nibble, in version 2 a check that disagrees with the header and the
 * length (a changed seed index, a cut or an extension: all but about 1 in 16), a layout byte
 * with reserved bits or invalid codes, an unsupported fingerprint width, a length that holds
 * no whole number of buckets or whose last byte has bits set after the last bucket. A
 * semi-sorted bucket damaged into an index past the last code (3875) answers "maybe" for the
 * keys that read it. Other damage is read as it is and can answer "absent" for keys that are
 * there: damaged buckets; header or length damage whose check agrees by chance; in version-1
 * blocks (no check) a seed index changed to another below 16, a layout changed to another that
 * the length fits, a block cut or extended to another length that fits — as damaged bits of
 * LevelDB's own Bloom filter can. Set paranoid_checks for filters that must never cost a
 * key. */
leveldb_filterpolicy_t *cksst_leveldb_policy_create(cksst_leveldb_stats *stats);

/* A clone of LevelDB's built-in Bloom filter (util/bloom.cc with util/hash.cc's Hash; name
 * CKSST_LEVELDB_BLOOM_NAME): the same bytes as leveldb_filterpolicy_create_bloom(bits_per_key),
 * so tables written by either are read by both, but counted in `stats` like the cuckoo
 * policy, so that the two can be measured the same way. One difference, for filters LevelDB
 * never writes: a filter shorter than 2 bytes answers "maybe" here, "absent" there.
 * bits_per_key must be in [0, 1000] (NULL otherwise). */
leveldb_filterpolicy_t *cksst_leveldb_bloom_policy_create(int bits_per_key,
                                                          cksst_leveldb_stats *stats);

/* Releases a policy made by either function above (leveldb_filterpolicy_destroy, which also
 * frees the policy's state). NULL is allowed. No database may still use it. */
void cksst_leveldb_policy_destroy(leveldb_filterpolicy_t *policy);

/* Copies the counters into `out`, each read atomically (see CKSST_LEVELDB_STATS_ATOMIC). */
void cksst_leveldb_stats_load(const cksst_leveldb_stats *stats, cksst_leveldb_stats *out);

/* Sets every counter to 0 (each atomically). */
void cksst_leveldb_stats_reset(cksst_leveldb_stats *stats);

/* The cuckoo policy's two callbacks, for engines that call them directly and for tests.
 *
 * cksst_leveldb_compact_build: the filter of `n` keys (`keys[i]` of `lens[i]` bytes), in
 * memory from malloc that the caller releases with free(), its length in `*len`: a compact
 * block, or the fallback byte if the block could not be built (*len = 1; `*built` is set to 0
 * then, 1 for a compact block; `built` may be NULL). NULL (with *len = 0) only if not even one
 * byte could be allocated.
 *
 * cksst_leveldb_compact_may_match: 1 if the key may be among those the filter was built from,
 * 0 if it certainly is not. A filter that is not a compact block (the fallback byte, an empty
 * or damaged header) answers 1. `refused` (may be NULL) is set to 1 in that case, else 0. */
char *cksst_leveldb_compact_build(const char *const *keys, const size_t *lens, int n,
                                  size_t *len, int *built);
uint8_t cksst_leveldb_compact_may_match(const char *key, size_t key_len, const char *filter,
                                        size_t filter_len, int *refused);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CKSST_LEVELDB_H */
