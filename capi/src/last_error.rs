//! The last error of each thread, for `vramkit_last_error` and `vramkit_last_error_kind`.

use std::cell::RefCell;

use vramkit::{Error, ErrorKind};

/// The kinds of the C header's `enum vramkit_error_kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum CErrorKind {
    /// No error.
    Ok = 0,
    /// The device has no room now.
    OutOfMemory = 1,
    /// The budget refuses the request.
    OverBudget = 2,
    /// The request can never fit.
    TooLarge = 3,
    /// A bad argument: unknown pointer, device or setting.
    Invalid = 4,
    /// No driver, or no such device.
    NoDevice = 5,
    /// Anything else (a lost device, a vramkit bug).
    Other = 6,
}

impl CErrorKind {
    /// The C kind of a vramkit error.
    pub fn of(e: &Error) -> Self {
        match e.kind() {
            ErrorKind::OutOfMemory | ErrorKind::HostOutOfMemory => Self::OutOfMemory,
            ErrorKind::OverBudget => Self::OverBudget,
            ErrorKind::TooLarge => Self::TooLarge,
            ErrorKind::NoAdapter => Self::NoDevice,
            ErrorKind::StaleHandle
            | ErrorKind::InvalidRange
            | ErrorKind::InvalidParameter
            | ErrorKind::ZeroSize
            | ErrorKind::Unsupported => Self::Invalid,
            _ => Self::Other,
        }
    }
}

thread_local! {
    static LAST: RefCell<(CErrorKind, String)> = const { RefCell::new((CErrorKind::Ok, String::new())) };
}

/// Records an error for this thread and logs it.
pub fn set(kind: CErrorKind, message: String) {
    log::debug!("vramkit-capi: {message}");
    LAST.with(|l| *l.borrow_mut() = (kind, message));
}

/// Records a vramkit error for this thread.
pub fn set_error(e: &Error) {
    set(CErrorKind::of(e), e.to_string());
}

/// Forgets this thread's last error (every C call starts with it, so that a call that
/// returns nothing can be checked afterwards).
#[inline]
pub fn clear() {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        if l.0 != CErrorKind::Ok {
            l.0 = CErrorKind::Ok;
            l.1.clear();
        }
    });
}

/// This thread's last error.
pub fn get() -> (CErrorKind, String) {
    LAST.with(|l| l.borrow().clone())
}
