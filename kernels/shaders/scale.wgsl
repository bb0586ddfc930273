// y[i] = a * x[i] + b, for the quickstart and the dispatch tests.
//
// Every storage binding is `read_write`, inputs too: sub-allocations share one wgpu buffer, and
// wgpu tracks usage per buffer, so a read-only and a read-write binding of two allocations in
// the same block would conflict. tests/shaders.rs checks this for every shader.

struct Params {
    a: f32,
    b: f32,
    n: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn scale(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    // Past 65,535 workgroups the dispatch is two-dimensional.
    let i = id.x + id.y * groups.x * 256u;
    if (i < params.n) {
        y[i] = params.a * x[i] + params.b;
    }
}
