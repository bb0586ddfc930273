use vramkit::{AllocDesc, Context, ContextDesc};
fn main() {
    let ctx = Context::host(ContextDesc::default());
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    for _ in 0..n {
        let h = ctx
            .alloc(AllocDesc::new("bench", std::hint::black_box(64 << 10)).uninit())
            .unwrap();
        ctx.release(h).unwrap();
    }
}
