// CUDA twin of io/alpha.wgsl: filters read premultiplied (rgb · a, a) and write straight colour
// (rgb / a; colour 0 where alpha is 0 or less).

__device__ __forceinline__ float4 load_premultiplied(BUF(src_t) src, unsigned i) {
    float4 v = load_src(src, i);
    return make_float4(v.x * v.w, v.y * v.w, v.z * v.w, v.w);
}

// load_premultiplied on raw reads, in units of SRC_UNIT² (see io/alpha.wgsl).
__device__ __forceinline__ float4 load_premultiplied_raw(BUF(src_t) src, unsigned i) {
    float4 v = load_src_raw(src, i);
    return make_float4(v.x * v.w, v.y * v.w, v.z * v.w, v.w * SRC_UNIT);
}

__device__ __forceinline__ void store_straight(BUF(dst_t) dst, unsigned i, float4 v) {
    float4 s = make_float4(0.0f, 0.0f, 0.0f, v.w);
    if (v.w > 0.0f) {
        float r = 1.0f / v.w;  // one division, not three
        s = make_float4(v.x * r, v.y * r, v.z * r, v.w);
    }
    store_dst(dst, i, s);
}
