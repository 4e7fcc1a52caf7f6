/*
 * stats_threads.c: the cuckoo policy's counters under LevelDB's reader threads (issue 40,
 * finding 6), built by tests/leveldb.rs with ThreadSanitizer.
 *
 *     stats_threads DIR
 *
 * Writes keys into a new database in DIR with the cuckoo policy and a stats block, compacts
 * them into tables, then looks keys up from 4 threads at once: LevelDB calls the policy's
 * key_may_match from each, and each call counts. Prints `atomic A lookups N`. Built with
 * CKSST_LEVELDB_NO_ATOMIC_BUILTINS (a compiler without atomic builtins), the counters must not
 * be touched at all (N = 0, and no data race for ThreadSanitizer to report); built without it,
 * N counts every filter asked (N > 0). Exit status 1 if not.
 */
#define _POSIX_C_SOURCE 200809L

#include "cksst_leveldb.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 20000
#define THREADS 4

static leveldb_t *db;
static leveldb_readoptions_t *reads;

static void check(char *err, const char *what) {
  if (err != NULL) {
    fprintf(stderr, "%s: %s\n", what, err);
    exit(2);
  }
}

static void *reader(void *arg) {
  long t = (long)arg;
  char key[32];
  int i;
  for (i = 0; i < KEYS; i++) {
    char *err = NULL;
    size_t len = 0;
    char *value;
    /* Present keys are even, absent ones odd. */
    snprintf(key, sizeof key, "k%015d", (i * 7 + (int)t) % (2 * KEYS));
    value = leveldb_get(db, reads, key, 16, &len, &err);
    check(err, "get");
    leveldb_free(value);
  }
  return NULL;
}

int main(int argc, char **argv) {
  cksst_leveldb_stats stats, seen;
  leveldb_filterpolicy_t *policy;
  leveldb_options_t *options;
  leveldb_writeoptions_t *writes;
  pthread_t threads[THREADS];
  char *err = NULL;
  char key[32];
  long t;
  int i;

  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  memset(&stats, 0, sizeof stats);
  policy = cksst_leveldb_policy_create(&stats);
  options = leveldb_options_create();
  leveldb_options_set_create_if_missing(options, 1);
  leveldb_options_set_filter_policy(options, policy);
  leveldb_options_set_compression(options, leveldb_no_compression);
  db = leveldb_open(options, argv[1], &err);
  check(err, "open");
  writes = leveldb_writeoptions_create();
  for (i = 0; i < KEYS; i++) {
    snprintf(key, sizeof key, "k%015d", 2 * i);
    leveldb_put(db, writes, key, 16, "value", 5, &err);
    check(err, "put");
  }
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  reads = leveldb_readoptions_create();
  for (t = 0; t < THREADS; t++) {
    if (pthread_create(&threads[t], NULL, reader, (void *)t) != 0) {
      return 2;
    }
  }
  for (t = 0; t < THREADS; t++) {
    pthread_join(threads[t], NULL);
  }
  cksst_leveldb_stats_load(&stats, &seen);
  printf("atomic %d lookups %llu\n", CKSST_LEVELDB_STATS_ATOMIC,
         (unsigned long long)seen.lookups);
  leveldb_close(db);
  leveldb_readoptions_destroy(reads);
  leveldb_writeoptions_destroy(writes);
  leveldb_options_destroy(options);
  cksst_leveldb_policy_destroy(policy);
  return (CKSST_LEVELDB_STATS_ATOMIC ? seen.lookups > 0 : seen.lookups == 0) ? 0 : 1;
}
