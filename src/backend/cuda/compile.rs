//! Kernel sources and their compilation: a [`KernelSource`] is compiled with NVRTC once per
//! device (or loaded from the on-disk kernel cache), its functions looked up by name.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

use super::context::{lock, DeviceCtx};
use super::probe::guarded;

/// Compiled kernels by (device, source name), then by kernel name.
type KernelTable = HashMap<(usize, &'static str), HashMap<String, CudaFunction>>;

use super::driver_error::driver_err;
use crate::backend::kernel_cache::{self, CacheKey, KeyParts};
use crate::{Error, Result, Scalar};

/// A CUDA C++ source compiled at run time with NVRTC, once per device.
///
/// `name` keys the module registry: one name, one source. Other crate modules declare theirs as
/// constants next to the code that launches them:
///
/// ```ignore
/// const RAY: KernelSource = KernelSource {
///     name: "ray_parallel",
///     prelude: &[],
///     code: include_str!("../../kernels/ray_parallel.cu"),
///     options: &[],
/// };
/// let f = device_ctx(id)?.function(&RAY, "forward_f32")?;
/// ```
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelSource {
    /// Registry key and NVRTC program name (`<name>.cu` in compiler messages).
    pub name: &'static str,
    /// Generated code compiled before `code` (e.g. the pointwise operations' table).
    pub prelude: &'static [&'static str],
    /// The CUDA C++ source.
    pub code: &'static str,
    /// Extra NVRTC options (the target architecture is added automatically).
    pub options: &'static [&'static str],
}

/// The elementwise vector operations and reductions.
pub(crate) const VECTOR_OPS: KernelSource = KernelSource {
    name: "vector_ops",
    prelude: &[],
    code: include_str!("../../../kernels/vector_ops.cu"),
    options: &["--fmad=false"],
};

/// Scalar types a device tensor can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dtype {
    F32,
    F64,
}

impl Dtype {
    /// The dtype of `T`, or an error for scalar types other than `f32` and `f64`.
    pub(crate) fn of<T: Scalar>() -> Result<Self> {
        if T::as_f32_slice(&[]).is_some() {
            Ok(Dtype::F32)
        } else if T::NAME == "f64" {
            Ok(Dtype::F64)
        } else {
            Err(Error::Unsupported(format!(
                "CUDA tensors hold f32 or f64, not {}",
                T::NAME
            )))
        }
    }

    /// Picks the kernel name for this dtype.
    pub(crate) fn pick(self, f32_name: &'static str, f64_name: &'static str) -> &'static str {
        match self {
            Dtype::F32 => f32_name,
            Dtype::F64 => f64_name,
        }
    }
}

impl DeviceCtx {
    /// The compiled module of `src` on this device: on first use, loaded from the on-disk kernel
    /// cache ([`kernel_cache`]) or compiled with NVRTC (and then stored in the cache).
    ///
    /// A cached entry that the driver refuses to load is compiled again and overwritten; cache
    /// failures are never errors.
    pub(crate) fn module(&self, src: &KernelSource) -> Result<Arc<CudaModule>> {
        let mut modules = lock(&self.modules);
        if let Some((code, m)) = modules.get(src.name) {
            if *code != src.code {
                return Err(Error::Cuda(format!(
                    "two different kernel sources are registered as {:?}",
                    src.name
                )));
            }
            return Ok(Arc::clone(m));
        }
        let mut options = vec![self.arch.clone()];
        options.extend(src.options.iter().map(|s| s.to_string()));
        let full: String = src.prelude.iter().copied().chain([src.code]).collect();
        let key = self.versions.map(|(nvrtc_version, driver_version)| {
            CacheKey::new(&KeyParts {
                name: src.name,
                source: &full,
                options: &options,
                compute_capability: self.cc,
                nvrtc_version,
                driver_version,
            })
        });
        let compile = || self.compile(src, &full, &options);
        let load = |ptx: &[u8]| self.load_ptx(src, ptx);
        let m = match &key {
            Some(key) => {
                kernel_cache::load_or_compile(kernel_cache::cache_dir(), key, compile, load)?
            }
            None => load(&compile()?)?,
        };
        modules.insert(src.name, (src.code, Arc::clone(&m)));
        Ok(m)
    }

    /// Compiles `full` (the prelude and code of `src`) to PTX with NVRTC; returns the PTX text
    /// (without a terminating NUL).
    pub(super) fn compile(
        &self,
        src: &KernelSource,
        full: &str,
        options: &[String],
    ) -> Result<Vec<u8>> {
        let opts = CompileOptions {
            options: options.to_vec(),
            name: Some(format!("{}.cu", src.name)),
            ..Default::default()
        };
        let ptx = guarded("NVRTC", || cudarc::nvrtc::compile_ptx_with_opts(full, opts))?.map_err(
            |e| match e {
                CompileError::CompileError { log, options, .. } => Error::Cuda(format!(
                    "NVRTC could not compile kernels/{}.cu with {options:?}:\n{}",
                    src.name,
                    log.to_string_lossy()
                )),
                e => Error::Cuda(format!("NVRTC failed on kernels/{}.cu: {e}", src.name)),
            },
        )?;
        let mut bytes = match ptx.as_bytes() {
            Some(b) => b.to_vec(),
            None => guarded("NVRTC", || ptx.to_src())?.into_bytes(),
        };
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        Ok(bytes)
    }

    /// Loads PTX text into the driver as a module of this context.
    pub(super) fn load_ptx(&self, src: &KernelSource, ptx: &[u8]) -> Result<Arc<CudaModule>> {
        let bad = || Error::Cuda(format!("the PTX of {} is not text", src.name));
        if ptx.contains(&0) {
            return Err(bad());
        }
        let text = std::str::from_utf8(ptx).map_err(|_| bad())?;
        self.ctx
            .load_module(Ptx::from_src(text))
            .map_err(driver_err(&format!("loading the module {}", src.name)))
    }

    /// The kernel `name` of the source `src` on this device (compiled and cached on first use).
    ///
    /// Each thread keeps the kernels it has looked up, so a launch takes no lock once its thread
    /// has launched the kernel before (the shared table's lock is taken on first use only).
    pub(crate) fn function(&self, src: &KernelSource, name: &str) -> Result<CudaFunction> {
        thread_local! {
            static KNOWN: RefCell<KernelTable> = RefCell::new(HashMap::new());
        }
        let key = (self.id, src.name);
        let known = KNOWN.with(|k| k.borrow().get(&key).and_then(|m| m.get(name)).cloned());
        if let Some(f) = known {
            return Ok(f);
        }
        let f = self.shared_function(src, name)?;
        KNOWN.with(|k| {
            k.borrow_mut()
                .entry(key)
                .or_default()
                .insert(name.to_string(), f.clone())
        });
        Ok(f)
    }

    /// [`Self::function`] through the table shared by all threads.
    pub(super) fn shared_function(&self, src: &KernelSource, name: &str) -> Result<CudaFunction> {
        if let Some(f) = lock(&self.functions)
            .get(src.name)
            .and_then(|m| m.get(name))
        {
            return Ok(f.clone());
        }
        let m = self.module(src)?;
        let f = m
            .load_function(name)
            .map_err(driver_err(&format!("kernel {name} in {}", src.name)))?;
        lock(&self.functions)
            .entry(src.name)
            .or_default()
            .insert(name.to_string(), f.clone());
        Ok(f)
    }
}
