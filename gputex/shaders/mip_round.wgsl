// Exact rounding of a quotient num / den to a code: the threshold test and the search the integer
// mip chains share (mip_int.wgsl, mip_spd.wgsl, mip_odd.wgsl; with mip_intmath.wgsl's big integers).
// The including shader declares `tables` (the sRGB tables of mips/integer.py: L, Q, Q / 2^32).

// num / den >= Q[k] (num * 2^32 >= Q[k] * den; num < 2^96, den < 2^64)
fn reaches(num: Big, den: Big, k: u32, srgb: bool) -> bool {
    var q = Big((1u << 31u), k - 1u, 0u, 0u);  // linear: k - 1/2
    if (srgb) {
        let i = 2u * (top() + 1u) + 3u * k;
        q = Big(tables[i], tables[i + 1u], tables[i + 2u], 0u);
    }
    let rhs = add(mul(q, den.x), mul(Big(0u, q.x, q.y, q.z), den.y));
    return ge(Big(0u, num.x, num.y, num.z), rhs);
}

// The code k with Q[k] <= num / den < Q[k + 1], known to lie in [lo, hi]: probes from `probe`
// one code at a time, twice, then bisection (one call site of reaches(): every inlined copy costs
// lavapipe compile time, and lavapipe runs a loop's body at least once, masked, even where no
// invocation enters it).
fn search_code(num: Big, den: Big, srgb: bool, lo0: u32, hi0: u32, probe0: u32) -> u32 {
    var lo = lo0;
    var hi = hi0;
    var probe = probe0;
    for (var i = 0u; i < 64u && lo < hi; i++) {
        if (reaches(num, den, probe, srgb)) {
            lo = probe;
            probe = select((lo + hi + 1u) / 2u, lo + 1u, i < 2u);
        } else {
            hi = probe - 1u;
            probe = select((lo + hi + 1u) / 2u, hi, i < 2u);
        }
        probe = clamp(probe, lo + 1u, max(hi, lo + 1u));
    }
    return lo;
}

// The code k with Q[k] <= num / den < Q[k + 1]: the search over every code from next to a float
// estimate.
fn round_code(num: Big, den: Big, srgb: bool) -> u32 {
    let m = f32(top());
    var v = approx(num) / approx(den);
    if (srgb) {
        v = encode(v / select(1099511627776.0, 2147483648.0, BITS == 8u)) * m;
    }
    return search_code(num, den, srgb, 0u, top(), max(1u, u32(clamp(floor(v + 0.5), 0.0, m))));
}
