// Shared by mip_exact.wgsl and mip_ff.wgsl, whose Params hold src_size, dst_size and chunk_rows:
// a box level's footprint on the base and its texels' area weights.

// Texel (x, y)'s footprint: base columns [x, y) of the result's x and y, rows [z, w) (the rows of
// chunk `chunk`, chunk_rows a chunk).
fn box_span(x: u32, y: u32, chunk: u32) -> vec4<u32> {
    let s = prm.src_size;
    let d = prm.dst_size;
    let x0 = (x * s.x) / d.x;
    let x1 = ((x + 1u) * s.x + d.x - 1u) / d.x;
    let y0 = (y * s.y) / d.y;
    let y1 = ((y + 1u) * s.y + d.y - 1u) / d.y;
    let r0 = min(y1, y0 + chunk * prm.chunk_rows);
    return vec4<u32>(x0, x1, r0, min(y1, r0 + prm.chunk_rows));
}

// The overlap of base texel t with level texel j on an axis going from s to d texels, in units
// of 1/d of a base texel.
fn box_weight(t: u32, j: u32, s: u32, d: u32) -> u32 {
    return min((t + 1u) * d, (j + 1u) * s) - max(t * d, j * s);
}
