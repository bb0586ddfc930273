// C = A·B, f32, row-major, any M, N, K. No workgroup memory: each invocation computes a 4×4 block
// of C from vec4 rows of B, the variant that runs best on CPU adapters (lavapipe), where
// workgroup memory is ordinary memory plus barriers.
//
// Bindings: A (M×K), B (K×N), C (M×N) — all read_write, see scale.wgsl — then dims. Large
// matrices come band by band: A and C are bound a band of rows at a time, and M is the band's.
// Every access is guarded by dims, which kernels::matmul checks against the buffers.

struct Dims {
    m: u32,
    n: u32,
    k: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

override WG_X: u32 = 8u;
override WG_Y: u32 = 8u;

fn load_b4(row: u32, col: u32) -> vec4<f32> {
    let i = row * dims.n + col;
    if (col + 3u < dims.n) {
        return vec4<f32>(b[i], b[i + 1u], b[i + 2u], b[i + 3u]);
    }
    var v = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        if (col + j < dims.n) {
            v[j] = b[i + j];
        }
    }
    return v;
}

fn load_a(row: u32, k: u32) -> f32 {
    if (row < dims.m) {
        return a[row * dims.k + k];
    }
    return 0.0;
}

fn store_c(row: u32, col: u32, v: vec4<f32>) {
    if (row >= dims.m) {
        return;
    }
    let i = row * dims.n + col;
    for (var j = 0u; j < 4u; j++) {
        if (col + j < dims.n) {
            c[i + j] = v[j];
        }
    }
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x * 4u;
    let row = gid.y * 4u;
    if (row >= dims.m || col >= dims.n) {
        return;
    }
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k = 0u; k < dims.k; k++) {
        let bv = load_b4(k, col);
        acc0 += load_a(row, k) * bv;
        acc1 += load_a(row + 1u, k) * bv;
        acc2 += load_a(row + 2u, k) * bv;
        acc3 += load_a(row + 3u, k) * bv;
    }
    store_c(row, col, acc0);
    store_c(row + 1u, col, acc1);
    store_c(row + 2u, col, acc2);
    store_c(row + 3u, col, acc3);
}
