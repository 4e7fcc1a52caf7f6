// build_cost.cc: instructions per key built and per KeyMayMatch, the cuckoo policy against
// LevelDB's Bloom filter at 10 bits a key, both through the policies LevelDB's C API makes (as
// key_may_match.cc calls them). Run under callgrind by bench/count, which reads the inclusive
// cost of the noinline functions below: instruction counts do not drift with the machine's
// load as times do, so they can steer work while other jobs run (times decide, on an idle
// machine, with bench/run).
//
// Usage: build_cost KEYS FILTERS
#include <leveldb/c.h>
#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "cksst_leveldb.h"
}

namespace {

std::string key_of(uint64_t k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llu", static_cast<unsigned long long>(k % 10000000000000000ULL));
  return std::string(buf, 16);
}

using Keys = std::vector<std::vector<leveldb::Slice>>;

// Each wrapper stores its own mark, so that the compiler cannot fold the Bloom and cuckoo
// wrappers into one function (GCC's identical-code folding at -O2), whose cost would then be
// counted under one name.
volatile int mark;

__attribute__((noinline)) size_t build(const leveldb::FilterPolicy *p, const Keys &keys, int n) {
  size_t bytes = 0;
  for (const auto &v : keys) {
    std::string f;
    p->CreateFilter(v.data(), n, &f);
    bytes += f.size();
  }
  return bytes;
}
__attribute__((noinline)) size_t build_bloom(const leveldb::FilterPolicy *p, const Keys &k, int n) {
  mark = 1;
  return build(p, k, n);
}
__attribute__((noinline)) size_t build_cuckoo(const leveldb::FilterPolicy *p, const Keys &k, int n) {
  mark = 2;
  return build(p, k, n);
}

__attribute__((noinline)) size_t look(const leveldb::FilterPolicy *p,
                                      const std::vector<std::string> &filters,
                                      const std::vector<std::string> &keys) {
  size_t hits = 0;
  for (size_t i = 0; i < filters.size(); i++) hits += p->KeyMayMatch(keys[i], filters[i]);
  return hits;
}
__attribute__((noinline)) size_t look_bloom(const leveldb::FilterPolicy *p,
                                            const std::vector<std::string> &f,
                                            const std::vector<std::string> &k) {
  mark = 3;
  return look(p, f, k);
}
__attribute__((noinline)) size_t look_cuckoo(const leveldb::FilterPolicy *p,
                                             const std::vector<std::string> &f,
                                             const std::vector<std::string> &k) {
  mark = 4;
  return look(p, f, k);
}

}  // namespace

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 36;
  int filters = argc > 2 ? std::atoi(argv[2]) : 2000;
  std::mt19937_64 rng(43 + n);
  std::vector<std::vector<std::string>> keys(filters);
  Keys slices(filters);
  for (int i = 0; i < filters; i++) {
    for (int j = 0; j < n; j++) keys[i].push_back(key_of(rng()));
    for (auto &k : keys[i]) slices[i].emplace_back(k);
  }
  leveldb_filterpolicy_t *bloom_c = leveldb_filterpolicy_create_bloom(10);
  leveldb_filterpolicy_t *cuckoo_c = cksst_leveldb_policy_create(nullptr);
  // leveldb_filterpolicy_t derives from leveldb::FilterPolicy alone (db/c.cc).
  auto *bloom = reinterpret_cast<const leveldb::FilterPolicy *>(bloom_c);
  auto *cuckoo = reinterpret_cast<const leveldb::FilterPolicy *>(cuckoo_c);
  size_t x = build_bloom(bloom, slices, n) + build_cuckoo(cuckoo, slices, n);
  std::vector<std::string> fb(filters), fc(filters), present(filters), absent(filters);
  for (int i = 0; i < filters; i++) {
    bloom->CreateFilter(slices[i].data(), n, &fb[i]);
    cuckoo->CreateFilter(slices[i].data(), n, &fc[i]);
    present[i] = keys[i][i % n];
    absent[i] = key_of(rng());
  }
  x += look_bloom(bloom, fb, present) + look_cuckoo(cuckoo, fc, present);
  x += look_bloom(bloom, fb, absent) + look_cuckoo(cuckoo, fc, absent);
  std::printf("%zu\n", x);
  cksst_leveldb_policy_destroy(cuckoo_c);
  leveldb_filterpolicy_destroy(bloom_c);
  return 0;
}
