// The tiled matmul's global memory (composed in front of matmul_tiled.wgsl), any M, N, K: the
// bindings as f32 arrays (as in matmul_register.wgsl), loads of 4 consecutive values as 4
// scalars, each guarded.

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: MatmulParams;

// Four values of A at row `r` and k = `kk` .. `kk`+3, 0 past M or past the K slice's end.
fn load_a(r: u32, kk: u32, k_end: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (r < dims.m) {
        let i = r * dims.k + kk;
        if (kk + 3u < k_end) {
            v = vec4<f32>(a[i], a[i + 1u], a[i + 2u], a[i + 3u]);
        } else {
            if (kk < k_end) {
                v.x = a[i];
            }
            if (kk + 1u < k_end) {
                v.y = a[i + 1u];
            }
            if (kk + 2u < k_end) {
                v.z = a[i + 2u];
            }
        }
    }
    return v;
}

// Four values of B at row `kk` and columns `col` .. `col`+3, 0 past N or past the K slice.
fn load_b(kk: u32, col: u32, k_end: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (kk < k_end) {
        let i = kk * dims.n + col;
        if (col + 3u < dims.n) {
            v = vec4<f32>(b[i], b[i + 1u], b[i + 2u], b[i + 3u]);
        } else {
            if (col < dims.n) {
                v.x = b[i];
            }
            if (col + 1u < dims.n) {
                v.y = b[i + 1u];
            }
            if (col + 2u < dims.n) {
                v.z = b[i + 2u];
            }
        }
    }
    return v;
}

// Four values of C at `row` and `col` .. `col`+3: written by the first K slice, added to by
// the others; nothing past M or N.
fn store_c(row: u32, col: u32, v: vec4<f32>) {
    if (row >= dims.m) {
        return;
    }
    let i = row * dims.n + col;
    let add = dims.k0 != 0u;
    if (col + 3u < dims.n) {
        if (add) {
            c[i] += v.x;
            c[i + 1u] += v.y;
            c[i + 2u] += v.z;
            c[i + 3u] += v.w;
        } else {
            c[i] = v.x;
            c[i + 1u] = v.y;
            c[i + 2u] = v.z;
            c[i + 3u] = v.w;
        }
        return;
    }
    for (var j = 0u; j < 3u; j++) {
        if (col + j < dims.n) {
            if (add) {
                c[i + j] += v[j];
            } else {
                c[i + j] = v[j];
            }
        }
    }
}
