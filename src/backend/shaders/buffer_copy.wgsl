// dst[i] = src[i] over `n` 32-bit words: the wgpu backend's copy between two ranges of one
// buffer (wgpu's copy_buffer_to_buffer refuses a buffer as both source and destination), used
// when compaction moves an allocation within its block. The ranges never overlap.
//
// Every storage binding is `read_write` (see scale.wgsl); both bind ranges of the same buffer.

struct Params {
    n: u32,
}

@group(0) @binding(0) var<storage, read_write> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn buffer_copy(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    // Past 65,535 workgroups the dispatch is two-dimensional.
    let i = id.x + id.y * groups.x * 256u;
    if (i < params.n) {
        dst[i] = src[i];
    }
}
