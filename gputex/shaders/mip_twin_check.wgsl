//! include mip_twin.wgsl
// spd.twin_check: texel (x, y) of a 256x4 twin gets the codes (x, 255 - x, (x + 64 y) % 256,
// (x * 7 + y) % 256) through twin_store1, so every code passes through every channel.

@compute @workgroup_size(64, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = gid.x;
    let y = gid.y;
    let codes = vec4<u32>(x, 255u - x, (x + 64u * y) % 256u, (x * 7u + y) % 256u);
    _ = twin_store1(0u, gid.xy, codes);
}
