// C = A·B, f32, row-major, any M, N, K. No workgroup memory: each invocation computes an 8×8
// block of C in registers, from one column of 8 A values and two vec4 of B per step along K (64
// FMAs per 16 loads). This is the variant for CPU adapters (lavapipe), where workgroup memory
// is ordinary memory plus barriers and every load is a gather.
//
// Bindings: A (M×K), B (K×N), C (M×N) — all read_write, see scale.wgsl — then dims. Large
// matrices come band by band: A and C are bound a band of rows at a time, and M is the band's.
// Every access is guarded by dims, which kernels::matmul checks against the buffers.

// Params: struct MatmulParams and K_SLICE, from shaders/params/matmul.wgsl.

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: MatmulParams;

override WG_X: u32 = 8u;
override WG_Y: u32 = 8u;

fn load_b4(row: u32, col: u32) -> vec4<f32> {
    let i = row * dims.n + col;
    if (col + 3u < dims.n) {
        return vec4<f32>(b[i], b[i + 1u], b[i + 2u], b[i + 3u]);
    }
    var v = vec4<f32>(0.0);
    if (col < dims.n) {
        v.x = b[i];
    }
    if (col + 1u < dims.n) {
        v.y = b[i + 1u];
    }
    if (col + 2u < dims.n) {
        v.z = b[i + 2u];
    }
    return v;
}

fn store_c4(row: u32, col: u32, v: vec4<f32>) {
    if (row >= dims.m) {
        return;
    }
    let i = row * dims.n + col;
    for (var j = 0u; j < 4u; j++) {
        if (col + j < dims.n) {
            if (dims.k0 == 0u) {
                c[i + j] = v[j];
            } else {
                c[i + j] += v[j];
            }
        }
    }
}

@compute @workgroup_size(WG_X, WG_Y)
fn matmul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x * 8u;
    let row = gid.y * 8u;
    if (row >= dims.m || col >= dims.n) {
        return;
    }
    // Rows past M read row M-1 (a valid row) and are never stored.
    var r: array<u32, 8>;
    for (var i = 0u; i < 8u; i++) {
        r[i] = min(row + i, dims.m - 1u) * dims.k;
    }
    var acc: array<vec4<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        acc[i] = vec4<f32>(0.0);
    }
    let k_end = min(dims.k, dims.k0 + K_SLICE);
    for (var k = dims.k0; k < k_end; k++) {
        let b0 = load_b4(k, col);
        let b1 = load_b4(k, col + 4u);
        for (var i = 0u; i < 8u; i++) {
            let av = a[r[i] + k];
            acc[i * 2u] += av * b0;
            acc[i * 2u + 1u] += av * b1;
        }
    }
    for (var i = 0u; i < 8u; i++) {
        store_c4(row + i, col, acc[i * 2u]);
        store_c4(row + i, col + 4u, acc[i * 2u + 1u]);
    }
}
