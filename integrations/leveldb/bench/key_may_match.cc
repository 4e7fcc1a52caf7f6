// key_may_match.cc: ns per KeyMayMatch and per key built, the cuckoo policy against LevelDB's
// Bloom filter at 10 bits a key, both called as LevelDB calls them: through the FilterPolicy
// that LevelDB's C API makes (leveldb_filterpolicy_create for the cuckoo policy,
// leveldb_filterpolicy_create_bloom(10) for Bloom; c.cc defines both as FilterPolicy
// subclasses, whose CreateFilter and KeyMayMatch are what table/filter_block.cc calls).
//
// 20 000 filters of db_bench-like keys (16 bytes, "%016d"), KEYS keys each; rounds alternate
// which policy goes first; each round times every filter once with a present key and once
// with an absent one. Ratios are per round (cuckoo / Bloom) and the median is reported, so
// that other jobs on the machine slow both sides of a round alike.
//
// The present keys sit in one vector of keys per filter, as the filters were built from them:
// reaching one costs two dependent loads that often miss, and that latency is most of a
// present-key lookup's time on both sides. With --flat, each round first copies its present
// keys into one contiguous vector, as the absent keys are: then a lookup's own instructions
// decide (a Get asks with a key it has just made, so this is the closer to LevelDB's reads).
// The absent keys too: without --flat their bytes lie between the filters' keys and miss the
// caches, which costs Bloom more than the cuckoo policy (Bloom's early exit mispredicts, and
// a mispredicted branch stops the next key's miss from overlapping).
// With --shuffled, as --flat, but each round asks the filters in a new random order (each
// key is still hot and its filter's bytes are not): a Get asks one filter of each table it
// reaches, rarely the one the Get before it asked.
//
// Build and run: integrations/leveldb/bench/run [--flat | --shuffled] [KEYS...]
#include <leveldb/c.h>
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "cksst_leveldb.h"
}

namespace {

const leveldb::FilterPolicy *as_policy(leveldb_filterpolicy_t *p) {
  // leveldb_filterpolicy_t derives from leveldb::FilterPolicy alone (db/c.cc).
  return reinterpret_cast<const leveldb::FilterPolicy *>(p);
}

double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string key_of(uint64_t k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llu", static_cast<unsigned long long>(k % 10000000000000000ULL));
  return std::string(buf, 16);
}

struct Side {
  const char *name;
  const leveldb::FilterPolicy *policy;
  std::vector<std::string> filters;
  size_t bytes = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run(int keys_per_filter, int rounds, bool flat, bool shuffled) {
  const int filters = 20000;
  std::mt19937_64 rng(43 + keys_per_filter);
  std::vector<std::vector<std::string>> keys(filters);
  std::vector<std::string> absent(filters);
  for (int i = 0; i < filters; i++) {
    for (int j = 0; j < keys_per_filter; j++) keys[i].push_back(key_of(rng()));
    absent[i] = key_of(rng());
  }
  std::vector<std::vector<leveldb::Slice>> slices(filters);
  for (int i = 0; i < filters; i++)
    for (auto &k : keys[i]) slices[i].emplace_back(k);

  leveldb_filterpolicy_t *bloom_c = leveldb_filterpolicy_create_bloom(10);
  leveldb_filterpolicy_t *cuckoo_c = cksst_leveldb_policy_create(nullptr);
  Side sides[2] = {{"bloom", as_policy(bloom_c), {}, 0}, {"cuckoo", as_policy(cuckoo_c), {}, 0}};

  std::vector<double> build_ratio, hit_ratio, miss_ratio;
  double build_ns[2] = {0, 0}, hit_ns[2] = {0, 0}, miss_ns[2] = {0, 0};
  size_t maybe[2] = {0, 0}, found[2] = {0, 0};
  // The order the filters are asked in: 0, 1, 2 … or, with --shuffled, a new random order
  // each round (the same for both policies).
  std::vector<int> order(filters);
  for (int i = 0; i < filters; i++) order[i] = i;
  for (int r = 0; r < rounds; r++) {
    if (shuffled) std::shuffle(order.begin(), order.end(), rng);
    double b[2], h[2], m[2];
    for (int t = 0; t < 2; t++) {
      int s = (r + t) % 2;  // alternate which side goes first
      Side &side = sides[s];
      side.filters.assign(filters, std::string());
      double t0 = now_ns();
      for (int i = 0; i < filters; i++)
        side.policy->CreateFilter(slices[i].data(), keys_per_filter, &side.filters[i]);
      double built = now_ns();  // the keys' copies below are neither side's build
      std::vector<std::string> flat_keys, flat_absent;
      if (flat) {
        flat_keys.reserve(filters);
        flat_absent.reserve(filters);
        for (int j = 0; j < filters; j++) {
          int i = order[j];
          flat_keys.push_back(keys[i][(i + r) % keys_per_filter]);
          flat_absent.push_back(absent[i]);
        }
      }
      const std::vector<std::string> &absent_keys = flat ? flat_absent : absent;
      double t1 = now_ns();
      size_t hits = 0;
      if (flat) {
        for (int j = 0; j < filters; j++)
          hits += side.policy->KeyMayMatch(flat_keys[j], side.filters[order[j]]);
      } else {
        for (int i = 0; i < filters; i++)
          hits += side.policy->KeyMayMatch(keys[i][(i + r) % keys_per_filter], side.filters[i]);
      }
      double t2 = now_ns();
      size_t maybes = 0;
      for (int i = 0; i < filters; i++)
        maybes += side.policy->KeyMayMatch(absent_keys[i], side.filters[flat ? order[i] : i]);
      double t3 = now_ns();
      b[s] = (built - t0) / (double(filters) * keys_per_filter);
      h[s] = (t2 - t1) / filters;
      m[s] = (t3 - t2) / filters;
      found[s] += hits;
      maybe[s] += maybes;
      side.bytes = 0;
      for (auto &f : side.filters) side.bytes += f.size();
    }
    build_ratio.push_back(b[1] / b[0]);
    hit_ratio.push_back(h[1] / h[0]);
    miss_ratio.push_back(m[1] / m[0]);
    for (int s = 0; s < 2; s++) {
      build_ns[s] += b[s] / rounds;
      hit_ns[s] += h[s] / rounds;
      miss_ns[s] += m[s] / rounds;
    }
  }
  std::printf(
      "| %d | %.1f / %.1f | %.2f | %.1f / %.1f | %.2f | %.1f / %.1f | %.2f | %.2f / %.2f | "
      "%.3f %% / %.3f %% |\n",
      keys_per_filter, build_ns[0], build_ns[1], median(build_ratio), hit_ns[0], hit_ns[1],
      median(hit_ratio), miss_ns[0], miss_ns[1], median(miss_ratio),
      sides[0].bytes * 8.0 / (double(filters) * keys_per_filter),
      sides[1].bytes * 8.0 / (double(filters) * keys_per_filter),
      100.0 * maybe[0] / (double(filters) * rounds), 100.0 * maybe[1] / (double(filters) * rounds));
  if (found[0] != size_t(filters) * rounds || found[1] != size_t(filters) * rounds) {
    std::fprintf(stderr, "a present key answered absent\n");
    std::exit(1);
  }
  cksst_leveldb_policy_destroy(cuckoo_c);
  leveldb_filterpolicy_destroy(bloom_c);
}

}  // namespace

int main(int argc, char **argv) {
  int rounds = 15;
  std::printf(
      "| keys a filter | build ns/key: Bloom / cuckoo | ratio | present ns: Bloom / cuckoo | "
      "ratio | absent ns: Bloom / cuckoo | ratio | bits/key: Bloom / cuckoo | FPR: Bloom / "
      "cuckoo |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::string mode = argc > 1 ? argv[1] : "";
  bool shuffled = mode == "--shuffled";
  bool flat = shuffled || mode == "--flat";
  int first = flat ? 2 : 1;
  if (argc > first) {
    for (int i = first; i < argc; i++) run(std::atoi(argv[i]), rounds, flat, shuffled);
  } else {
    for (int n : {8, 19, 36, 71, 140}) run(n, rounds, flat, shuffled);
  }
  return 0;
}
