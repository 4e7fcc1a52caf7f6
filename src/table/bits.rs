//! Little-endian bit fields in a byte region: bit `p` is bit `p mod 8` of byte `p / 8`
//! (FORMAT.md §3). A field of at most 57 bits is read or written through the 8-byte window
//! that starts at its first byte, through checked slices: the slot operations of inserts and
//! removes use these (lookups read through [`Region`](super::raw::Region)). The region keeps 16
//! bytes of slack after its last bucket for them.

/// The 8 bytes at `at` as a little-endian `u64`.
#[inline(always)]
fn load(t: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&t[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The `width`-bit field (`width ≤ 57`) that starts at bit `pos`.
#[inline(always)]
pub(crate) fn read(t: &[u8], pos: u64, width: u32) -> u64 {
    (load(t, (pos >> 3) as usize) >> (pos & 7)) & mask(width)
}

/// Writes `value` (which fits in `width ≤ 57` bits) into the field that starts at bit `pos`.
#[inline(always)]
pub(crate) fn write(t: &mut [u8], pos: u64, width: u32, value: u64) {
    let at = (pos >> 3) as usize;
    let shift = pos & 7;
    let m = mask(width) << shift;
    let w = (load(t, at) & !m) | ((value << shift) & m);
    t[at..at + 8].copy_from_slice(&w.to_le_bytes());
}

#[inline(always)]
const fn mask(width: u32) -> u64 {
    (1u64 << width) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_every_offset_and_width() {
        for width in 1..=57u32 {
            for pos in 0..80u64 {
                let mut t = vec![0xA5u8; 24];
                let before = t.clone();
                let v = 0x0123_4567_89AB_CDEFu64 & mask(width);
                write(&mut t, pos, width, v);
                assert_eq!(read(&t, pos, width), v, "width {width} pos {pos}");
                // Bits outside the field are untouched.
                for bit in (0..24 * 8).filter(|&b| b < pos || b >= pos + width as u64) {
                    let (byte, off) = ((bit / 8) as usize, bit % 8);
                    assert_eq!((t[byte] >> off) & 1, (before[byte] >> off) & 1, "bit {bit}");
                }
            }
        }
    }

    #[test]
    fn bit_order_is_little_endian() {
        let mut t = vec![0u8; 16];
        write(&mut t, 3, 10, 0b11_0000_0001);
        // Bit 3 of byte 0 is the field's lowest bit; its top two bits are bits 11, 12.
        assert_eq!(t[0], 0b0000_1000);
        assert_eq!(t[1], 0b0001_1000);
    }
}
