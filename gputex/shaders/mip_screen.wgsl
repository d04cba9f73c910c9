//! include mip_round.wgsl
// The float screen in front of the exact rounding (mip_spd.wgsl, mip_odd.wgsl): the including
// shader declares `tables`, `SMEM_TABLES` and `qtab` (the float thresholds in workgroup memory).

// Q[k] / 2^32 as a float (k = top + 1: never reached)
fn threshold_f(k: u32, srgb: bool) -> f32 {
    if (!srgb) {
        return f32(k) - 0.5;
    }
    if (SMEM_TABLES) {
        return qtab[min(k, 256u)];
    }
    return bitcast<f32>(tables[5u * (top() + 1u) + k]);
}

// Relative distance from a threshold beyond which the float estimate decides: its own error
// (a few 2^-24: three roundings in each approx(), the division, the table's float) is under
// 2^-20, so where the estimate is farther than 2^-18 the exact comparisons give the same code.
const MARGIN: f32 = 3.814697265625e-6;

// The code k with Q[k] <= num / den < Q[k + 1]: the float estimate's code where it lies clearly
// inside that code's interval; next to one threshold (within MARGIN of it, clearly inside the two
// intervals beside it) one exact comparison with it; else the exact search (round_code).
fn round_fast(num: Big, den: Big, srgb: bool) -> u32 {
    let m = f32(top());
    let x = approx(num) / approx(den);
    var v = x;
    if (srgb) {
        v = encode(x / select(1099511627776.0, 2147483648.0, BITS == 8u)) * m;
    }
    let k = u32(clamp(floor(v + 0.5), 0.0, m));
    let tl = threshold_f(k, srgb);
    let th = threshold_f(k + 1u, srgb);
    let above = k == 0u || x >= tl * (1.0 + MARGIN);
    let below = k == top() || x < th * (1.0 - MARGIN);
    if (SCREEN && above && below) {  // (a GPU skips the rest; lavapipe runs it masked anyway)
        return k;
    }
    var j = 0u;  // the one threshold to compare with (0: none)
    if (below && k > 0u && x >= tl * (1.0 - MARGIN) && (k == 1u || x >= threshold_f(k - 1u, srgb) * (1.0 + MARGIN))) {
        j = k;
    } else if (above && k < top() && x < th * (1.0 + MARGIN)
               && (k + 1u == top() || x < threshold_f(k + 2u, srgb) * (1.0 - MARGIN))) {
        j = k + 1u;
    }
    // one search whatever the screen found (one iteration: the threshold j; else every code from
    // the estimate, as round_code): one copy of reaches() and of the estimate
    var lo = 0u;
    var hi = top();
    var probe = max(1u, k);
    if (SCREEN && j > 0u) {
        lo = j - 1u;
        hi = j;
        probe = j;
    }
    return search_code(num, den, srgb, lo, hi, probe);
}
