// Destination pixels as RGBA32F.
typedef float4 dst_t;

__device__ __forceinline__ void store_dst(BUF(dst_t) dst, unsigned i, float4 v) {
    dst[i] = v;
}
