// CUDA twin of axpy.wgsl: y[i] = a * x[i] + y[i].

struct Params {
    float a;
    unsigned n;
};

extern "C" __global__ void axpy(BUF(float) x, BUF(float) y, const Params p) {
    unsigned i = flat_index();
    if (i < p.n) {
        y[i] = p.a * x[i] + y[i];
    }
}
