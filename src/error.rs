//! The crate's single error type.

use std::path::PathBuf;

/// Everything that can go wrong in rodl.
///
/// Every fallible public function returns [`Result`]; rodl does not panic on user input,
/// on a missing GPU or driver, or on GPU memory exhaustion.
///
/// `Debug` reads like the message (`Display`), so a program whose `main` returns
/// `Result<(), rodl::Error>` (or `rodl::Result<()>`) ends with `Error: ` and rodl's message;
/// the alternate form `{:#?}` puts the variant's name in front of it.
///
/// ```
/// use rodl::{uniform_discr, Error};
/// let err: Error = uniform_discr::<f64>(&[0.0], &[1.0], &[0]).unwrap_err();
/// assert_eq!(format!("{err:?}"), err.to_string());
/// assert_eq!(format!("{err:#?}"), format!("InvalidArgument: {err}"));
/// ```
///
/// Such a `main` fails with (the standard library reports `Error: {:?}`; `tests/error_report.rs`
/// checks it):
///
/// ```text
/// Error: invalid argument: a tensor space needs non-zero axis lengths, got [0]
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two shapes that must agree do not.
    #[error("shape mismatch in {context}: expected {expected:?}, got {got:?}")]
    Shape {
        /// Where the mismatch was found.
        context: String,
        /// The shape that was required.
        expected: Vec<usize>,
        /// The shape that was given.
        got: Vec<usize>,
    },
    /// An element or operator does not belong to the space it is used with.
    #[error("space mismatch in {context}: expected {expected}, got {got}")]
    SpaceMismatch {
        /// Where the mismatch was found.
        context: String,
        /// The space that was required.
        expected: String,
        /// The space that was given.
        got: String,
    },
    /// Data or operators live on different devices.
    #[error("device mismatch in {context}: expected {expected}, got {got}")]
    DeviceMismatch {
        /// Where the mismatch was found.
        context: String,
        /// The device that was required.
        expected: String,
        /// The device that was given.
        got: String,
    },
    /// An argument is out of its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An operation that needs a linear operator got a non-linear one.
    #[error("operator is not linear: {0}")]
    NotLinear(String),
    /// A geometry description is inconsistent.
    #[error("invalid geometry: {0}")]
    Geometry(String),
    /// The requested feature or combination is not supported.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// CUDA was asked for but cannot be used (no feature, no driver, no such GPU).
    #[error("CUDA is not available: {0}")]
    CudaUnavailable(String),
    /// A CUDA call failed (launch, copy, allocation, kernel compilation).
    #[error("CUDA error: {0}")]
    Cuda(String),
    /// A CUDA graph capture in progress forbade a call that rodl needs (an allocation, a free,
    /// a host wait): another thread captures in *global* mode (`cudaStreamCaptureModeGlobal`,
    /// the default of `cudaStreamBeginCapture` and of PyTorch's `torch.cuda.graph`), which
    /// forbids such calls on every thread of the process while it lasts. rodl neither waits
    /// nor retries: capture in `thread_local` or `relaxed` mode
    /// (`torch.cuda.graph(g, capture_error_mode="thread_local")`), or call rodl on the
    /// capturing stream itself (see [`crate::interop`]), and rodl runs beside the capture.
    #[error("{0}")]
    GraphCapture(String),
    /// Reading or writing a file failed.
    #[error("{path}: {message}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Something would need more memory than there is: more than the host-memory limit (see
    /// [`crate::memory`]), or than a GPU's free memory.
    #[error("{}", crate::memory::describe_shortage(what, *bytes, *limit, device))]
    OutOfMemory {
        /// What was to be allocated.
        what: String,
        /// The bytes it needs.
        bytes: u128,
        /// The limit in bytes.
        limit: u64,
        /// Where: `Device::Cpu` for host memory.
        device: crate::Device,
    },
    /// A configuration document (geometry JSON, …) is malformed.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A collective operation of a distributed computation failed on one of the ranks (or in
    /// the communication itself): every rank of the job gets this error, naming the rank that
    /// failed first and its message (see [`crate::distributed`]).
    #[error("rank {rank}: {message}")]
    Distributed {
        /// The rank that failed (the lowest, when several did).
        rank: usize,
        /// What went wrong there.
        message: String,
    },
}

impl Error {
    /// The variant's name (`"Shape"`, `"InvalidArgument"`, …), for the alternate `Debug` form.
    fn variant_name(&self) -> &'static str {
        match self {
            Error::Shape { .. } => "Shape",
            Error::SpaceMismatch { .. } => "SpaceMismatch",
            Error::DeviceMismatch { .. } => "DeviceMismatch",
            Error::InvalidArgument(_) => "InvalidArgument",
            Error::NotLinear(_) => "NotLinear",
            Error::Geometry(_) => "Geometry",
            Error::Unsupported(_) => "Unsupported",
            Error::CudaUnavailable(_) => "CudaUnavailable",
            Error::Cuda(_) => "Cuda",
            Error::GraphCapture(_) => "GraphCapture",
            Error::Io { .. } => "Io",
            Error::OutOfMemory { .. } => "OutOfMemory",
            Error::Config(_) => "Config",
            Error::Distributed { .. } => "Distributed",
        }
    }
}

/// The message, as `Display` writes it; `{:#?}` writes `Variant: message`.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if f.alternate() {
            write!(f, "{}: {self}", self.variant_name())
        } else {
            write!(f, "{self}")
        }
    }
}

/// `std::result::Result` with [`Error`] by default; the second parameter is there so that
/// `use rodl::prelude::*` (or `use rodl::Result`) leaves two-parameter uses of the standard
/// `Result` working.
///
/// ```
/// use rodl::Result;
/// fn parse(s: &str) -> Result<u32, std::num::ParseIntError> { s.parse() } // std's Result
/// fn space() -> Result<rodl::Space<f64>> { rodl::rn(&[3]) } // rodl::Error
/// assert!(parse("x").is_err() && space().is_ok());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::DeviceMismatch`]: at `context`, `got` was given where `expected` was
    /// required (each written with `Display`: a [`Device`](crate::Device), a string, …).
    ///
    /// ```
    /// use rodl::{Device, Error};
    /// let err = Error::device_mismatch("my operator: input", Device::Cpu, Device::Cuda(0));
    /// assert!(err.to_string().contains("cuda:0"));
    /// assert!(matches!(err, Error::DeviceMismatch { .. }));
    /// ```
    pub fn device_mismatch(
        context: impl std::fmt::Display,
        expected: impl std::fmt::Display,
        got: impl std::fmt::Display,
    ) -> Self {
        Error::DeviceMismatch {
            context: context.to_string(),
            expected: expected.to_string(),
            got: got.to_string(),
        }
    }

    pub(crate) fn shape(context: impl Into<String>, expected: &[usize], got: &[usize]) -> Self {
        Error::Shape {
            context: context.into(),
            expected: expected.to_vec(),
            got: got.to_vec(),
        }
    }

    /// An [`Error::InvalidArgument`] with the message `msg`: for users' own operators,
    /// functionals and checks that reject an argument.
    ///
    /// ```
    /// use rodl::{Error, Result};
    /// fn checked_step(step: f64) -> Result<f64> {
    ///     if step > 0.0 { Ok(step) } else { Err(Error::invalid(format!("step {step} must be positive"))) }
    /// }
    /// let err = checked_step(-1.0).unwrap_err();
    /// assert!(matches!(err, Error::InvalidArgument(_)));
    /// assert_eq!(err.to_string(), "invalid argument: step -1 must be positive");
    /// ```
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }
}
