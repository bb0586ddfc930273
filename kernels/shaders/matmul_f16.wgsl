// C = A·B with A and B in IEEE binary16 and C in f32, row-major, any M, N, K: the fallback of
// the f16 matmul for adapters without cooperative matrices (lavapipe) and the twin of the
// CUDA kernel. The f16 values are read as packed u32 pairs (`unpack2x16float`, the lower half
// first), so the kernel needs no SHADER_F16; the products and sums are f32. Each invocation
// computes an 8×8 block of C in registers, as matmul_register.wgsl does.
//
// Bindings: A (M×K halves), B (K×N halves), C (M×N f32) — all read_write, see scale.wgsl —
// then dims. A and C come a band of rows at a time. Every access is guarded by dims, which
// kernels::matmul_typed checks against the buffers (A and B bound to their last whole word).

// Params: struct MatmulF16Params and K_SLICE_F16, from shaders/params/matmul_f16.wgsl.

@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: MatmulF16Params;

override WG_X: u32 = 8u;
override WG_Y: u32 = 8u;

// The f16 value at element i of A, as f32 (exact).
fn half_a(i: u32) -> f32 {
    return unpack2x16float(a[i >> 1u])[i & 1u];
}

fn half_b(i: u32) -> f32 {
    return unpack2x16float(b[i >> 1u])[i & 1u];
}

fn load_b4(row: u32, col: u32) -> vec4<f32> {
    let i = row * dims.n + col;
    if (col + 3u < dims.n) {
        if ((i & 1u) == 0u) {
            return vec4<f32>(unpack2x16float(b[i >> 1u]), unpack2x16float(b[(i >> 1u) + 1u]));
        }
        return vec4<f32>(half_b(i), half_b(i + 1u), half_b(i + 2u), half_b(i + 3u));
    }
    var v = vec4<f32>(0.0);
    if (col < dims.n) {
        v.x = half_b(i);
    }
    if (col + 1u < dims.n) {
        v.y = half_b(i + 1u);
    }
    if (col + 2u < dims.n) {
        v.z = half_b(i + 2u);
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
    let k_end = min(dims.k, dims.k0 + K_SLICE_F16);
    for (var k = dims.k0; k < k_end; k++) {
        let b0 = load_b4(k, col);
        let b1 = load_b4(k, col + 4u);
        for (var i = 0u; i < 8u; i++) {
            let av = half_a(r[i] + k);
            acc[i * 2u] += av * b0;
            acc[i * 2u + 1u] += av * b1;
        }
    }
    for (var i = 0u; i < 8u; i++) {
        store_c4(row + i, col, acc[i * 2u]);
        store_c4(row + i, col + 4u, acc[i * 2u + 1u]);
    }
}
