//! cuBLAS (loaded at run time) for matmul, where it is installed.

use std::sync::Mutex;

use cudarc::cublas::{result as blas, sys};

use super::{CudaBackend, CudaBlock};
use crate::backend::BlockRange;
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::QueueIndex;

/// A cuBLAS handle bound to the backend's stream, in its default (strict FP32) math mode.
pub(super) struct Blas(Mutex<sys::cublasHandle_t>);

// SAFETY: a cuBLAS handle may be used from any thread with its context current; the mutex
// serialises the calls, as cuBLAS asks for a handle shared between threads.
unsafe impl Send for Blas {}
// SAFETY: as above.
unsafe impl Sync for Blas {}

impl Blas {
    /// Loads cuBLAS and makes a handle on `stream`, or `None` (logged) where it is missing.
    pub(super) fn load(stream: cudarc::driver::sys::CUstream) -> Option<Self> {
        // SAFETY: only tries to dlopen cuBLAS by its known names.
        if !unsafe { sys::is_culib_present() } {
            log::info!("vramkit: cuBLAS not found; matmul uses vramkit's own kernel");
            return None;
        }
        let made = std::panic::catch_unwind(|| {
            let handle = blas::create_handle()?;
            // SAFETY: `handle` was just created; the stream lives as long as the backend, which
            // drops this handle first.
            unsafe { blas::set_stream(handle, stream.cast()) }?;
            Ok::<_, blas::CublasError>(handle)
        });
        match made {
            Ok(Ok(handle)) => Some(Self(Mutex::new(handle))),
            Ok(Err(e)) => {
                log::warn!("vramkit: cuBLAS did not start ({e:?}); using vramkit's own matmul");
                None
            }
            Err(_) => {
                log::warn!("vramkit: the cuBLAS library lacks entry points; using own matmul");
                None
            }
        }
    }

    /// Row-major `C = A·B`: in cuBLAS's column-major terms `Cᵀ = Bᵀ·Aᵀ`.
    pub(super) fn sgemm(
        &self,
        backend: &CudaBackend,
        b: &[BlockRange<'_, CudaBlock>],
        [m, n, k]: [u32; 3],
    ) -> Result<()> {
        let ([a, bm, c], [m, n, k]) = operands(b, [m, n, k])?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ptr = |r: &BlockRange<'_, CudaBlock>| (r.block.ptr + r.offset) as *mut f32;
        backend.device.bind()?;
        let handle = lock(&self.0);
        // SAFETY: the ranges were checked to hold m×k, k×n and m×n floats; the handle runs on the
        // backend's stream, so the product is ordered with the rest of the recorded work.
        unsafe {
            blas::sgemm(
                *handle,
                sys::cublasOperation_t::CUBLAS_OP_N,
                sys::cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha,
                ptr(bm),
                n,
                ptr(a),
                k,
                &beta,
                ptr(c),
                n,
            )
        }
        .map_err(|e| Error::Backend {
            message: format!("cublasSgemm failed: {e:?}"),
        })
    }
}

impl Blas {
    /// Row-major `C = A·B` with f16 `A` and `B` and an f32 `C`, accumulated in f32
    /// (`cublasGemmEx`, `CUBLAS_COMPUTE_32F`: tensor cores on GPUs that have them); in
    /// column-major terms `Cᵀ = Bᵀ·Aᵀ`, as [`sgemm`](Self::sgemm).
    pub(super) fn gemm_f16(
        &self,
        backend: &CudaBackend,
        b: &[BlockRange<'_, CudaBlock>],
        [m, n, k]: [u32; 3],
    ) -> Result<()> {
        let ([a, bm, c], [m, n, k]) = operands(b, [m, n, k])?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ptr = |r: &BlockRange<'_, CudaBlock>| (r.block.ptr + r.offset) as *mut std::ffi::c_void;
        backend.device.bind()?;
        let handle = lock(&self.0);
        let f16 = sys::cudaDataType::CUDA_R_16F;
        // SAFETY: the ranges were checked to hold m×k and k×n f16 values and m×n floats; alpha
        // and beta are f32 as CUBLAS_COMPUTE_32F asks; the handle runs on the backend's stream,
        // so the product is ordered with the rest of the recorded work.
        unsafe {
            blas::gemm_ex(
                *handle,
                sys::cublasOperation_t::CUBLAS_OP_N,
                sys::cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                (&alpha as *const f32).cast(),
                ptr(bm),
                f16,
                n,
                ptr(a),
                f16,
                k,
                (&beta as *const f32).cast(),
                ptr(c),
                sys::cudaDataType::CUDA_R_32F,
                n,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
            )
        }
        .map_err(|e| Error::Backend {
            message: format!("cublasGemmEx (f16) failed: {e:?}"),
        })
    }
}

/// Records `C = A·B` on cuBLAS (f32 A and B, or f16 ones with `f16`) in the backend's order.
pub(super) fn record(
    backend: &CudaBackend,
    bindings: &[BlockRange<'_, CudaBlock>],
    dims: [u32; 3],
    f16: bool,
) -> Result<QueueIndex> {
    backend.enter()?;
    let blas = backend.blas().ok_or_else(|| Error::Unsupported {
        what: "cuBLAS matmul".into(),
        reason: "cuBLAS (libcublas.so) was not found; use MatmulKernel::Tiled".into(),
    })?;
    for b in bindings {
        backend.prefetch(b.block, b.offset, b.size, false)?;
    }
    if f16 {
        blas.gemm_f16(backend, bindings, dims)?;
    } else {
        blas.sgemm(backend, bindings, dims)?;
    }
    Ok(lock(&backend.subs).record())
}

impl Drop for Blas {
    fn drop(&mut self) {
        let handle = *lock(&self.0);
        // SAFETY: the handle was made by `load` and is not used after this.
        if let Err(e) = unsafe { blas::destroy_handle(handle) } {
            log::warn!("vramkit: destroying the cuBLAS handle failed: {e:?}");
        }
    }
}

/// The three bindings A, B, C and the dimensions as cuBLAS takes them.
///
/// # Errors
/// [`Error::ShapeMismatch`] for other than three bindings; [`Error::InvalidParameter`] for a
/// dimension of 2³¹ or more.
fn operands<'b, 'r>(
    b: &'b [BlockRange<'r, CudaBlock>],
    dims: [u32; 3],
) -> Result<([&'b BlockRange<'r, CudaBlock>; 3], [i32; 3])> {
    let [a, bm, c] = b else {
        return Err(Error::ShapeMismatch {
            expected: "three bindings: A, B, C".into(),
            actual: format!("{} bindings", b.len()),
        });
    };
    let mut out = [0i32; 3];
    for (o, v) in out.iter_mut().zip(dims) {
        *o = i32::try_from(v).map_err(|_| Error::InvalidParameter {
            name: "matmul dimension",
            value: v.to_string(),
            reason: "cuBLAS takes dimensions below 2^31",
        })?;
    }
    Ok(([a, bm, c], out))
}
