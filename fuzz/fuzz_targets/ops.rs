//! Operation sequences against a model: no false negatives, `len` exact, and a failed insert
//! changes nothing — with coverage guidance finding the sequences proptest does not.
#![no_main]

use cuckoo_sst::{Config, CuckooFilter, Error};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;

fuzz_target!(|data: &[u8]| {
    let Some((&setup, ops)) = data.split_first() else { return };
    let b = [2usize, 4, 8][(setup % 3) as usize];
    let bits = [8u32, 16, 32][((setup / 3) % 3) as usize];
    let kicks = [0u32, 1, 10, 500][((setup / 9) % 4) as usize];
    let mut f = CuckooFilter::new(
        Config::new(24).bucket_size(b).fingerprint_bits(bits).max_kicks(kicks).seed(setup as u64),
    )
    .unwrap();
    let mut model: HashMap<u8, usize> = HashMap::new();
    for &op in ops {
        let key = [op & 0x3F];
        match op >> 6 {
            0 | 1 => {
                let before = f.clone();
                match f.insert(&key) {
                    Ok(()) => *model.entry(key[0]).or_default() += 1,
                    Err(Error::Full) => assert!(f == before),
                    Err(e) => panic!("{e}"),
                }
            }
            2 => {
                if let Some(n) = model.get_mut(&key[0]) {
                    assert!(f.remove(&key));
                    *n -= 1;
                    if *n == 0 {
                        model.remove(&key[0]);
                    }
                }
            }
            _ => {
                let bytes = f.to_bytes();
                assert!(CuckooFilter::from_bytes(&bytes).unwrap() == f);
            }
        }
        assert_eq!(f.len(), model.values().sum::<usize>());
        for (&k, &n) in &model {
            assert!(f.count(&[k]) >= n);
        }
    }
});
