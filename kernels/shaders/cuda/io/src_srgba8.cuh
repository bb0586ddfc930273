// Source pixels as sRGB-encoded RGBA8, read as linear light (like io/src_srgba8.wgsl).
typedef unsigned src_t;

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    unsigned v = src[i];
    return make_float4(to_linear(unorm8(v & 255u)), to_linear(unorm8((v >> 8) & 255u)),
                       to_linear(unorm8((v >> 16) & 255u)), unorm8(v >> 24));
}

// What load_src_raw gives for 1.0.
constexpr float SRC_UNIT = 1.0f;

// load_src's value of every byte, by table (see io/src_srgba8.wgsl): 0..256 colour, 256..512
// alpha. Filled by prepare_src before the block's barrier in kernels that read raw (the blur).
__shared__ float srgb_table[512];

// Every thread of a block of 256 calls this, before a __syncthreads().
__device__ __forceinline__ void prepare_src(unsigned local) {
    float b = unorm8(local & 255u);
    srgb_table[local & 255u] = to_linear(b);
    srgb_table[256u + (local & 255u)] = b;
}

__device__ __forceinline__ float4 load_src_raw(BUF(src_t) src, unsigned i) {
    unsigned v = src[i];
    return make_float4(srgb_table[v & 255u], srgb_table[(v >> 8) & 255u],
                       srgb_table[(v >> 16) & 255u], srgb_table[256u + (v >> 24)]);
}
