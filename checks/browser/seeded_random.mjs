// The property tests' one generator: a SplitMix32-like sequence of numbers in [0, 1), so that the same
// seed gives the same run (the seed is printed with a failure, and kept as a vector when it found a bug).

/// Returns a function giving the seed's next number in [0, 1) at each call.
export function seededRandom(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}
