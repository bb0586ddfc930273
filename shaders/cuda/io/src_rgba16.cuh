// Source pixels as RGBA16 (two u32 words per pixel: R | G << 16, B | A << 16), read as [0, 1]
// floats, v / 65535, like io/src_rgba16.wgsl.
typedef uint2 src_t;

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    uint2 p = src[i];
    return make_float4(float(p.x & 0xffffu) / 65535.0f, float(p.x >> 16) / 65535.0f,
                       float(p.y & 0xffffu) / 65535.0f, float(p.y >> 16) / 65535.0f);
}
