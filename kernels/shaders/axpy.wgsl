// y[i] = a * x[i] + y[i] over n f32 values. Bindings: x, y (read_write, see scale.wgsl), params.

struct Params {
    a: f32,
    n: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn axpy(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let i = id.x + id.y * groups.x * 256u;
    if (i < params.n) {
        y[i] = params.a * x[i] + y[i];
    }
}
