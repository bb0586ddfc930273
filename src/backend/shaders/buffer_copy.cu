// CUDA twin of buffer_copy.wgsl: dst[i] = src[i] over n words. The CUDA backend copies with
// cuMemcpyAsync, which takes ranges of one allocation; this twin keeps the kernel set alike.

struct Params {
    unsigned n;
};

extern "C" __global__ void buffer_copy(BUF(unsigned) src, BUF(unsigned) dst, const Params p) {
    unsigned i = flat_index();
    if (i < p.n) {
        dst[i] = src[i];
    }
}
