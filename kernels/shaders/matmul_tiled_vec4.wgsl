// The tiled matmul's global memory (composed in front of matmul_tiled.wgsl) when N and K are
// multiples of 4 (kernels::matmul checks): the bindings as vec4 arrays, one vec4 load per chunk
// of 4 values. Every chunk is then wholly inside or wholly past M, N and the K slice (whose
// ends are multiples of 4), so one guard per chunk keeps every access in bounds.

@group(0) @binding(0) var<storage, read_write> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> dims: MatmulParams;

// A at row `r` and k = `kk` .. `kk`+3 (`kk` a multiple of 4), 0 past M or the K slice's end.
fn load_a(r: u32, kk: u32, k_end: u32) -> vec4<f32> {
    if (r < dims.m && kk < k_end) {
        return a[(r * dims.k + kk) / 4u];
    }
    return vec4<f32>(0.0);
}

// B at row `kk` and columns `col` .. `col`+3 (`col` a multiple of 4), 0 past N or the K slice.
fn load_b(kk: u32, col: u32, k_end: u32) -> vec4<f32> {
    if (kk < k_end && col < dims.n) {
        return b[(kk * dims.n + col) / 4u];
    }
    return vec4<f32>(0.0);
}

// C at `row` and `col` .. `col`+3: written by the first K slice, added to by the others;
// nothing past M or N.
fn store_c(row: u32, col: u32, v: vec4<f32>) {
    if (row < dims.m && col < dims.n) {
        let i = (row * dims.n + col) / 4u;
        if (dims.k0 != 0u) {
            c[i] += v;
        } else {
            c[i] = v;
        }
    }
}
