// Shared by every CUDA twin (`backend::CUDA_PRELUDE`, which each twin starts with): storage bindings, the WGSL built-ins
// the kernels use, for float4, and the flat index of one-dimensional dispatches.

// A storage binding of element type T: declare every binding parameter as `BUF(T) name` and
// index it as an array. A safe dispatch (`Context::dispatch`) compiles the kernel with
// VRAMKIT_CHECKED: each binding then arrives as its pointer and its length in bytes, and every
// index is clamped into the binding, as WGSL's runtime bounds checks do, so no params can make
// it reach past its binding. The typed kernel functions, which validate their params against
// the bound sizes, launch the unchecked build, where a binding is a plain pointer.
#ifdef VRAMKIT_CHECKED
// Where accesses to a binding too small for one element go.
__device__ __align__(16) unsigned char vramkit_sink[64];

template <typename T>
struct checked_buf {
    T* ptr;
    unsigned long long bytes;
    __device__ __forceinline__ T& operator[](unsigned long long i) const {
        static_assert(sizeof(T) <= sizeof(vramkit_sink), "element larger than the sink");
        unsigned long long n = bytes / sizeof(T);
        return n == 0 ? *reinterpret_cast<T*>(vramkit_sink) : ptr[i < n ? i : n - 1];
    }
};
#define BUF(T) checked_buf<T>
// Elements in a binding (WGSL's arrayLength).
template <typename T>
__device__ __forceinline__ unsigned long long buf_len(checked_buf<T> b) {
    return b.bytes / sizeof(T);
}
#else
#define BUF(T) T*
// An unchecked binding carries no length: its launcher validated the params against it.
template <typename T>
__device__ __forceinline__ unsigned long long buf_len(T*) {
    return ~0ull;
}
#endif

__device__ __forceinline__ float4 operator+(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
__device__ __forceinline__ float4 operator*(float s, float4 v) {
    return make_float4(s * v.x, s * v.y, s * v.z, s * v.w);
}
__device__ __forceinline__ float4 operator/(float4 v, float s) {
    return make_float4(v.x / s, v.y / s, v.z / s, v.w / s);
}
__device__ __forceinline__ void operator+=(float4& a, float4 b) {
    a = a + b;
}
// x / d for an integer x below 2^16 and d = 255 or 65535, correctly rounded (the IEEE quotient,
// as WGSL's unpack4x8unorm gives) without a division: the product with the reciprocal, corrected
// by one fused multiply-add. Exact for every such x (checked exhaustively on the host:
// kernels/src/image/unorm.rs); a plain `/` is an IEEE division, a dozen instructions per value.
__device__ __forceinline__ float unorm(unsigned x, float d, float r) {
    float q = float(x) * r;
    return fmaf(fmaf(-q, d, float(x)), r, q);
}
__device__ __forceinline__ float unorm8(unsigned x) {
    return unorm(x, 255.0f, 1.0f / 255.0f);
}
__device__ __forceinline__ float unorm16(unsigned x) {
    return unorm(x, 65535.0f, 1.0f / 65535.0f);
}

// Exact conversions by bit patterns, the twins of io/bits.wgsl (which says why): a conversion
// instruction issues at an eighth of the rate of an FMA.
__device__ __forceinline__ float4 bytes_to_f32(unsigned v) {
    const float m = 8388608.0f;
    return make_float4(__uint_as_float((v & 255u) | 0x4b000000u) - m,
                       __uint_as_float(((v >> 8) & 255u) | 0x4b000000u) - m,
                       __uint_as_float(((v >> 16) & 255u) | 0x4b000000u) - m,
                       __uint_as_float((v >> 24) | 0x4b000000u) - m);
}
__device__ __forceinline__ float2 shorts_to_f32(unsigned v) {
    const float m = 8388608.0f;
    return make_float2(__uint_as_float((v & 0xffffu) | 0x4b000000u) - m,
                       __uint_as_float((v >> 16) | 0x4b000000u) - m);
}
__device__ __forceinline__ float2 halves_to_f32_scaled(unsigned v) {
    return make_float2(__uint_as_float(((v & 0x7fffu) << 13) | ((v & 0x8000u) << 16)),
                       __uint_as_float(((v >> 3) & 0x0fffe000u) | (v & 0x80000000u)));
}
__device__ __forceinline__ float flush_below_f16_normal(float x) {
    return fabsf(x) < 6.103515625e-5f ? 0.0f : x;
}

// WGSL mix(a, b, t) = a * (1 - t) + b * t.
__device__ __forceinline__ float4 mix4(float4 a, float4 b, float t) {
    return (1.0f - t) * a + t * b;
}

// global_invocation_id.x + global_invocation_id.y * num_workgroups.x * workgroup_size.x: one
// element per thread, the grid two-dimensional past 65,535 blocks.
__device__ __forceinline__ unsigned flat_index() {
    return blockIdx.x * blockDim.x + threadIdx.x + blockIdx.y * gridDim.x * blockDim.x;
}

// global_invocation_id of a two-dimensional dispatch.
__device__ __forceinline__ unsigned gid_x() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned gid_y() {
    return blockIdx.y * blockDim.y + threadIdx.y;
}
