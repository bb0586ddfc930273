// CUDA twin of scale.wgsl: y[i] = a * x[i] + b.

struct Params {
    float a;
    float b;
    unsigned n;
};

extern "C" __global__ void scale(BUF(float) x, BUF(float) y, const Params p) {
    unsigned i = flat_index();
    if (i < p.n) {
        y[i] = p.a * x[i] + p.b;
    }
}
