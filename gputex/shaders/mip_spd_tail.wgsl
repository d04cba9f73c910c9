// The chain's last levels made by the last workgroup of the pass before them (spd.HANDOFF, GPU forms
// only: spd.py puts this text into mip_spd.wgsl at HANDOFF_CODE, calls handoff() at the end of main
// (HANDOFF_CALL) and sends the pass's kept sums here (KEEP3 = keep_handoff) instead of into dst_sums.
// CPU adapters' shaders never contain it.)
//
// Why this is correct under WGSL's memory model (WGSL 14.5: the Vulkan memory model; atomic built-ins
// on storage memory are atomic operations of QueueFamily (or Device) scope with Relaxed semantics;
// workgroupBarrier orders workgroup memory only). Relaxed atomics give no ordering between different
// locations, so a counter alone cannot tell the last workgroup that the others' kept sums (plain
// stores) are visible: SPD's "last workgroup continues" is not guaranteed there. What the model does
// guarantee is coherence per location: all atomic operations on one location (in scope) fall in one
// order that every invocation observes consistently, and a read never sees a value older than one it (or
// an operation ordered before it in program order) saw. (When a write becomes visible the model does not
// say; like C++'s atomics it expects "a reasonable time", which GPUs give atomics at device scope; the
// spin below is bounded, SPIN_LIMIT, where one would not.) So every word handed over is a self-validating atomic
// word: it holds SENTINEL before the pass, exactly one producer writes it once (atomicStore) with a
// value that cannot be SENTINEL (31 bits of a sum a word, bit 31 clear), and the consumer reads it
// with atomicLoad until it is not SENTINEL. The first such value is the one write there is: the final
// value, whatever order the other words become visible in. The counter (handoff[0], atomicAdd) only
// elects the consumer: each workgroup adds 1 after all its invocations passed main's last
// workgroupBarrier, which follows every store of its kept sums in program order, so when the count
// reaches the number of workgroups every word has been written (executed) and each spin ends once
// that write is visible; no workgroup waits for another one that might not be running (no forward
// progress between workgroups is assumed). The consumer then writes SENTINEL back into each word it
// read and 0 into the counter (program order after its reads: read-write coherence keeps its reads
// from seeing its own reset), so the buffer is ready for the next chain without a clear; the next
// dispatch that uses it comes after a pipeline barrier (wgpu orders dispatches that write a buffer).
//
// The sums (below 2^77: 2^30 base texels, intbox.MAX_BASE_TEXELS, each below 2^31 * 65535) go out as
// three words of 31 bits (bits 0-30, 31-61, 62-92), the consumer puts them together again: the same
// integers as store_sums', so the tail's codes are those of the separate last pass (round_one on the
// same sums; the same bytes).
//
// The tail: the kept level (tl.src_size, at most 256 texels, one an invocation) into `tile` (word w of
// texel j at tile[256 w + j], as tile_put), then each of the tail's levels a barrier each, a thread a
// (texel, channel) summing its children (children_sum, as channel_sum), into the level slots of lsums_put's
// layout (85 slots: the tail's texels, at most 85), then every (texel, channel) rounded at once
// (round_one) and gathered in ctile, then each texel written (TAIL_OUT: tail_buffer into `out`, or
// tail_store into the tail's write views).

//! default TAIL_OUT tail_buffer
//! default TAIL_FORMAT rgba8unorm

struct TailLevel {
    size: vec2<u32>,
    s: u32,      // log2(base texels per texel)
    off: u32,    // first output word (tail_buffer)
}

struct Tail {
    src_size: vec2<u32>,  // the kept level
    levels: u32,
    groups: u32,          // workgroups of the dispatch (the count that elects the last)
    lv: array<TailLevel, 6>,
    pitch: array<vec4<u32>, 6>,  // .x: output words per row (tail_buffer)
}

@group(0) @binding(12) var<uniform> tl: Tail;
@group(0) @binding(13) var<storage, read_write> handoff: array<atomic<u32>>;  // [0]: the counter
@group(0) @binding(14) var tail0: texture_storage_2d<TAIL_FORMAT, write>;
@group(0) @binding(15) var tail1: texture_storage_2d<TAIL_FORMAT, write>;
@group(0) @binding(16) var tail2: texture_storage_2d<TAIL_FORMAT, write>;
@group(0) @binding(17) var tail3: texture_storage_2d<TAIL_FORMAT, write>;
@group(0) @binding(18) var tail4: texture_storage_2d<TAIL_FORMAT, write>;
@group(0) @binding(19) var tail5: texture_storage_2d<TAIL_FORMAT, write>;

const SENTINEL: u32 = 0xffffffffu;
var<workgroup> tail_last: u32;
// An invocation's spin reads, all words together, before it gives up (a bound against a hang where an
// adapter broke the reasoning above, or a bug left a word unwritten: then wrong bytes, which the
// hand-off's self-check, spd.handoff_checked, catches, instead of a device that never finishes).
// Where the writes are visible within microseconds, as they must be, it is never reached.
const SPIN_LIMIT: u32 = 1048576u;
var<private> spins: u32 = 0u;

// KEEP3 = keep_handoff: the kept sums' three words (word j of store_sums' layout) handed over
fn keep_handoff(j: u32, v: Big) {
    atomicStore(&handoff[1u + j], v.x & 0x7fffffffu);
    atomicStore(&handoff[2u + j], ((v.x >> 31u) | (v.y << 1u)) & 0x7fffffffu);
    atomicStore(&handoff[3u + j], ((v.y >> 30u) | (v.z << 2u)) & 0x7fffffffu);
}

// A handed-over word: read until it is not SENTINEL (its one write), then SENTINEL again
fn take(k: u32) -> u32 {
    var v = atomicLoad(&handoff[k]);
    loop {
        if (v != SENTINEL || spins >= SPIN_LIMIT) {
            break;
        }
        spins++;
        v = atomicLoad(&handoff[k]);
    }
    atomicStore(&handoff[k], SENTINEL);
    return v;
}

fn take3(j: u32) -> Big {
    let a = take(1u + j);
    let b = take(2u + j);
    let c = take(3u + j);
    return Big(a | (b << 31u), (b >> 1u) | (c << 30u), c >> 2u, 0u);
}

fn tail_write(m: u32, x: u32, y: u32, codes: vec4<u32>) {
    TAIL_OUT(m, x, y, codes);
}

fn tail_buffer(m: u32, x: u32, y: u32, codes: vec4<u32>) {
    store_codes(tl.lv[m].off + y * tl.pitch[m].x, x, codes);
}

fn tail_store(m: u32, x: u32, y: u32, codes: vec4<u32>) {
    let p = vec2<u32>(x, y);
    let v = store_value(codes);
    switch m {
        case 0u: { textureStore(tail0, p, v); }
        case 1u: { textureStore(tail1, p, v); }
        case 2u: { textureStore(tail2, p, v); }
        case 3u: { textureStore(tail3, p, v); }
        case 4u: { textureStore(tail4, p, v); }
        default: { textureStore(tail5, p, v); }
    }
}

// The first slot of tail level m (its texels' slots follow, row by row)
fn tail_slot(m: u32) -> u32 {
    var k = 0u;
    for (var i = 0u; i < m; i++) {
        k += tl.lv[i].size.x * tl.lv[i].size.y;
    }
    return k;
}

// HANDOFF_CALL: at the end of main, in uniform control flow, every invocation past main's last
// workgroupBarrier (so past every store of the workgroup's kept sums)
fn tail_levels(t0: u32) {
    if (t0 == 0u) {
        let done = atomicAdd(&handoff[0], 1u) + 1u;
        tail_last = select(0u, 1u, done == tl.groups);
        if (done == tl.groups) {
            atomicStore(&handoff[0], 0u);  // (every workgroup has counted: ready for the next chain)
        }
    }
    if (workgroupUniformLoad(&tail_last) == 0u) {
        return;
    }
    // the last workgroup: the kept level's sums, each word the one its producer wrote
    let ss = tl.src_size;
    if (t0 < 256u) {
        atomicStore(&ctile[t0], 0u);
    }
    if (t0 < ss.x * ss.y) {
        let j = t0 * SLOTS * 3u;
        let z = Big(0u);
        var s = Sums(take3(j), z, z, z);
        if (NC == 3u) {
            s.c1 = take3(j + 3u);
            s.c2 = take3(j + 6u);
        }
        if (HAS_ALPHA) {
            s.a = take3(j + 3u * NC);
        }
        sums_put(t0, 256u, s);
    }
    var prev = ss;
    for (var m = 0u; m < tl.levels; m++) {
        workgroupBarrier();
        let e = tl.lv[m].size;
        let j = t0 >> 2u;
        let ch = t0 & 3u;
        if (j < e.x * e.y) {  // channel ch (3: alpha) of texel j, as channel_sum
            let o = vec2<u32>(j % e.x, j / e.x);
            let rr = prev / e;
            let from_src = m == 0u;
            let stride = select(85u, 256u, from_src);
            let base = select(3072u + tail_slot(max(m, 1u) - 1u), 0u, from_src);
            let v = children_sum(o, rr, base, prev.x, stride, ch);
            let at = 3072u + 255u * ch + tail_slot(m) + j;
            tile[at] = v.x;
            tile[at + 85u] = v.y;
            tile[at + 170u] = v.z;
        }
        prev = e;
    }
    workgroupBarrier();
    let total = tail_slot(tl.levels);
    for (var k = t0; k < total * SLOTS; k += 256u) {
        let slot = k / SLOTS;
        let c = k % SLOTS;
        var m = 0u;
        while (m + 1u < tl.levels && slot >= tail_slot(m + 1u)) {
            m++;
        }
        let code = round_one(lsums_get(slot), c, tl.lv[m].s);
        atomicOr(&ctile[2u * slot + c / 2u], code << (16u * (c % 2u)));
    }
    workgroupBarrier();
    if (t0 < total) {
        var m = 0u;
        while (m + 1u < tl.levels && t0 >= tail_slot(m + 1u)) {
            m++;
        }
        let j = t0 - tail_slot(m);
        let e = tl.lv[m].size;
        let lo = atomicLoad(&ctile[2u * t0]);
        let hi = atomicLoad(&ctile[2u * t0 + 1u]);
        var codes = vec4<u32>(lo & 0xffffu, lo >> 16u, hi & 0xffffu, hi >> 16u);
        if (NC == 1u) {
            codes = vec4<u32>(codes.x, 0u, 0u, codes.y);
        }
        tail_write(m, j % e.x, j / e.x, codes);
    }
}
