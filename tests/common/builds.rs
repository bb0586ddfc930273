//! The kernel builds the backends log ("… built in … ms"), counted by a logger installed by
//! the first call: for tests of which kernels a call builds. One test binary counts for all its
//! tests, so tests that count take [`one_at_a_time`].

use std::sync::{Mutex, MutexGuard, OnceLock};

struct Builds(Mutex<usize>);

impl log::Log for Builds {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.target().starts_with("vramkit")
    }
    fn log(&self, r: &log::Record) {
        let said = r.args().to_string();
        // The memory manager's own copy kernel (wgpu) comes with a compaction under pressure,
        // whenever that happens: not the caller's.
        if self.enabled(r.metadata())
            && said.contains(" built in ")
            && !said.contains("buffer_copy")
        {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        }
    }
    fn flush(&self) {}
}

fn builds() -> &'static Builds {
    static B: OnceLock<&'static Builds> = OnceLock::new();
    B.get_or_init(|| {
        let b: &'static Builds = Box::leak(Box::new(Builds(Mutex::new(0))));
        assert!(
            log::set_logger(b).is_ok(),
            "another logger was installed first: builds cannot be counted"
        );
        log::set_max_level(log::LevelFilter::Debug);
        b
    })
}

/// The kernels built so far by this test binary.
pub fn count() -> usize {
    *builds().0.lock().unwrap_or_else(|e| e.into_inner())
}

/// One counting test at a time: the count is global.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static L: Mutex<()> = Mutex::new(());
    let guard = L.lock().unwrap_or_else(|e| e.into_inner());
    builds();
    guard
}
