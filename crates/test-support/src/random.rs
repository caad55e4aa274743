//! A small deterministic generator for the pseudo-random robustness tests:
//! the same inputs on every run and every machine, no dependency.

/// xorshift64: fast, reproducible, good enough to mix test inputs.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a seed (0 is replaced: xorshift never leaves it).
    pub fn new(seed: u64) -> Self {
        XorShift(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// A number in `0..n` (`n` at least 1).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_per_seed_and_stays_in_range() {
        let draw = |seed| {
            let mut r = XorShift::new(seed);
            (0..100).map(|_| r.below(7)).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
        assert!(draw(0).iter().all(|x| *x < 7));
        // Every value comes up.
        assert!((0..7).all(|v| draw(1).contains(&v)));
    }
}
