// CUDA twin of add.wgsl: z[i] = x[i] + y[i].

struct Params {
    unsigned n;
};

extern "C" __global__ void add(BUF(float) x, BUF(float) y, BUF(float) z, const Params p) {
    unsigned i = flat_index();
    if (i < p.n) {
        z[i] = x[i] + y[i];
    }
}
