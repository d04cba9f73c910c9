//! default WG_SIZE 256u
//! default WG_TX 1u
// The GPU forms' three-level first pass by an entry point of its own (spd.FIRST_ENTRY, issue 16; GPU
// forms only: spd.py puts this text into mip_spd.wgsl at its placeholder for it, substituted first with
// the pass's subgroup builtins and workgroup shape (spd.FIRST_KEYS), and makes that pass's pipeline with
// entry first_main; every other pipeline's text is main's as before). Why: on the H200 the first pass's
// time moved by 22% with a change to code main never runs in it (mip_spd.wgsl's child_sums), so the
// first pass is compiled here from an entry whose reachable code is only what that pass executes: main's
// path for it, with main's dead paths left out (passes from sums, 16-bit bases, the footprint loops).
// H200 (eleventh session): the first pass 3% faster than main's (0.0932 against 0.0968 ms at 4096^2,
// 0.3333 against 0.3445 at 8192^2). sg_level3n's hand-over of level 3's sums to the rounds in workgroup
// memory stays main's run-time test (3u < prm.levels): made known dead (3u < PASS_LEVELS) its first pass
// measured 0.5-1.4% slower at 4096^2 and 0.5-0.7% at 8192^2, in both rounds (the chain 0.3-0.6%).
//
// spd.py uses it only where main would take exactly this path (spd._first_entry): the base (not stored
// sums), 8-bit, ROUND_A_LEVEL and SCREEN (so ONE), the subgroup form with SG_NARROW (SG_LEVEL3N =
// sg_level3n), PASS_LEVELS == 3 and SG_TILE == 1 (level 3 halves both axes of level 2, hence levels 1
// and 2 halve both axes before it: QUAD's footprints, r = 1); levels stored or through the buffer, level 3's
// sums kept (STORE) or not (a chain of four levels). Elsewhere the pass keeps main. The same calls as
// main's (quad_by_child, finalize_narrow, sg_level3n) on the same numbers: the same bytes.
//
// Partial tiles and edges as main: an anchor texel outside level 2 (p >= its size) loads nothing and
// writes nothing, its lane adds zero sums to level 3's exchanges (every lane takes part in the
// shuffles: sg_level3n writes only live texels).
@compute @workgroup_size(WG_SIZE)
fn first_main(@builtin(workgroup_id) wg0: vec3<u32>, @builtin(local_invocation_index) ti: u32 SG_ARGS) {
    let t0 = ti & 255u;
    let tv = SG_INDEX;  // (the subgroup form: the thread's index from its subgroup and lane)
    let t_sg = tv & 255u;
    let wsub = tv >> 8u;
    let wg = vec2<u32>(wg0.x * WG_TX + (wsub & (WG_TX - 1u)), wg0.y * (WG_SIZE / 256u / WG_TX) + wsub / WG_TX);
    let lid = morton(t_sg);
    // (main's table copy, written out: main's text stays as it was)
    if (SMEM_TABLES && ti < 256u) {
        let t = t0;
        ltab[t] = tables[2u * t];
        let words = CODE_WORDS && ONE;  // (with CODE_WORDS this pass reads no other table)
        if (!words) {
            qtab[t] = bitcast<f32>(tables[5u * 256u + t]);
        }
        if (t == 0u && !words) {
            qtab[256] = 3.4e38;  // above every value (k + 1 = 256 is never compared)
        }
        if (ONE && !words) {
            for (var k = t; k < BUCKET_WORDS; k += 256u) {
                btab[k] = tables[BUCKET_AT + k];
            }
        }
    }
    if (SMEM_TABLES) {
        workgroupBarrier();
    }
    let p = wg * 16u + lid;
    var nar = zero_narrow();
    if (all(p < prm.lv[1].size)) {
        nar = quad_by_child(p);
        finalize_narrow(1u, p.x, p.y, nar);
    }
    sg_level3n(wg, t_sg, nar);
}
