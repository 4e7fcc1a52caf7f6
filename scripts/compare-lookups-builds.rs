// The helpers and the `build!` macro both binaries of the harness use (`scripts/compare-lookups`
// copies this file beside them as `src/builds.rs`; each includes it).

/// Key `i`: 16 bytes, as `benches/peers.rs` makes them.
fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

/// `POOL` keys drawn from ids `lo..lo + n`.
fn pool(lo: u64, n: u64, salt: u64) -> Vec<[u8; 16]> {
    let mut x = 0x2545_F491_4F6C_DD1Du64 ^ salt;
    (0..POOL)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            key(lo + x % n)
        })
        .collect()
}

/// One build's lookups, instantiated for `base` and for `head` (the same source against
/// either crate: both name their items alike).
macro_rules! build {
    ($krate:ident) => {
        mod $krate {
            use std::hint::black_box;
            use $krate::{Config, CuckooFilter, FilterBuilder, FilterRef, KeyHash};

            /// A filter of ids `lo..lo + n`, built as an SSTable's is.
            pub fn filter(lo: u64, n: u64) -> CuckooFilter {
                let mut b = FilterBuilder::new(Config::new(n as usize));
                for i in lo..lo + n {
                    b.add_key(&super::key(i));
                }
                b.finish().unwrap()
            }

            /// `CuckooFilter::contains(&[u8])`, as a user calls it: the owned filter, a key whose
            /// length the compiler does not know.
            pub fn owned(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let len = black_box(16);
                keys.iter().filter(|k| f.contains(&k[..len])).count()
            }

            /// `FilterRef::contains(&[u8])`, the view made once.
            pub fn view(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let (v, len) = (f.as_filter_ref(), black_box(16));
                keys.iter().filter(|k| v.contains(&k[..len])).count()
            }

            /// The filter saved to `path` and mapped.
            pub fn mapped(f: &CuckooFilter, path: &std::path::Path) -> $krate::MappedFilter {
                f.save(path).unwrap();
                $krate::MappedFilter::open(path).unwrap()
            }

            /// `MappedFilter::contains(&[u8])`.
            pub fn mapped_contains(m: &$krate::MappedFilter, keys: &[[u8; 16]]) -> usize {
                let len = black_box(16);
                keys.iter().filter(|k| m.contains(&k[..len])).count()
            }

            /// A growable filter of `n` keys, sized for them (one level in every build).
            pub fn scalable(n: u64) -> $krate::ScalableCuckooFilter {
                let mut f = $krate::ScalableCuckooFilter::new(Config::new(n as usize)).unwrap();
                for i in 0..n {
                    f.insert(&super::key(i)).unwrap();
                }
                f
            }

            /// `ScalableCuckooFilter::contains(&[u8])`.
            pub fn scalable_contains(f: &$krate::ScalableCuckooFilter, keys: &[[u8; 16]]) -> usize {
                let len = black_box(16);
                keys.iter().filter(|k| f.contains(&k[..len])).count()
            }

            /// Single lookups, the key hashed each time: how many answered "maybe".
            pub fn single(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let v = f.as_filter_ref();
                keys.iter()
                    .filter(|k| v.contains_hash(KeyHash::of(black_box(&k[..]))))
                    .count()
            }

            /// Batched lookups of keys hashed first, 1 024 at a time, by `probe` (a filter's
            /// `contains_batch`): how many answered "maybe".
            fn batched(keys: &[[u8; 16]], probe: impl Fn(&[KeyHash], &mut [bool])) -> usize {
                let mut hashes = [KeyHash::of(b""); 1024];
                let mut out = [false; 1024];
                let mut hits = 0;
                for chunk in keys.chunks(1024) {
                    for (h, k) in hashes.iter_mut().zip(chunk) {
                        *h = KeyHash::of(black_box(&k[..]));
                    }
                    let n = chunk.len();
                    probe(&hashes[..n], &mut out[..n]);
                    hits += out[..n].iter().filter(|&&x| x).count();
                }
                hits
            }

            /// Batched lookups in a single filter.
            pub fn batch(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let v = f.as_filter_ref();
                batched(keys, |h, out| v.contains_batch(h, out))
            }

            /// The LSM read: each key hashed once and asked of every filter, newest first,
            /// stopping at the first "maybe".
            pub fn lsm(filters: &[CuckooFilter], keys: &[[u8; 16]]) -> usize {
                let views: Vec<FilterRef<'_>> = filters.iter().map(|f| f.as_filter_ref()).collect();
                keys.iter()
                    .filter(|k| {
                        FilterRef::first_containing(&views, KeyHash::of(black_box(&k[..])))
                            .is_some()
                    })
                    .count()
            }

            /// A growable filter grown a thousandfold to `n` keys (builds from format version
            /// 3 on: stretch levels).
            #[cfg(feature = "grown")]
            pub fn grown(n: u64) -> $krate::ScalableCuckooFilter {
                let config = Config::new((n / 1000) as usize);
                let mut f = $krate::ScalableCuckooFilter::new(config).unwrap();
                for i in 0..n {
                    f.insert(&super::key(i)).unwrap();
                }
                f
            }

            #[cfg(feature = "grown")]
            pub fn grown_single(f: &$krate::ScalableCuckooFilter, keys: &[[u8; 16]]) -> usize {
                keys.iter()
                    .filter(|k| f.contains_hash(KeyHash::of(black_box(&k[..]))))
                    .count()
            }

            #[cfg(feature = "grown")]
            pub fn grown_batch(f: &$krate::ScalableCuckooFilter, keys: &[[u8; 16]]) -> usize {
                batched(keys, |h, out| f.contains_batch(h, out))
            }
        }
    };
}
