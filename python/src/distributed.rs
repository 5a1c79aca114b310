//! `rodl.distributed.RayTransform`: rodl's `DistributedRayTransform` on an mpi4py communicator
//! (the extension's `mpi` feature), NumPy arrays of this rank's share in and out.
//!
//! The communicator is mpi4py's own handle (`MPI._handleof(comm)`, an `MPI_Comm` of the same
//! `libmpi`), of which rodl makes a duplicate (`MpiComm::from_raw`), so that its collectives
//! never match the program's messages. Everything after the adoption is agreed across the
//! ranks before it communicates: an argument that is wrong on one rank raises
//! `rodl.DistributedError` naming that rank on every rank.

use std::sync::Arc;

use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;
use pyo3::types::{PySlice, PyTuple};

use crate::collective::agreed;
use crate::errors::{type_error, value_error, IntoPyResult};
use crate::geometry::PyGeometry;
use crate::operator::PyOperator;
use crate::scalar::{each, Any};
use crate::space::PySpace;
use rodl::distributed::{Across, DistributedRayTransform, Partition, Plan};
use rodl::tomo::Backend;
use rodl::LinOp;

/// Whether the extension was built with its `mpi` feature.
pub const MPI_BUILT: bool = cfg!(feature = "mpi");

/// The ray transform of `geometry` on the volume `space`, distributed over the ranks of the
/// mpi4py communicator `comm` (default `MPI.COMM_WORLD`): each rank holds its share of the
/// data and computes it with its own `backend` (`"cpu"`, or `"cuda"`: this rank's GPU on its
/// node, `cuda:{local_rank}`, unless `device=` or `"cuda:N"` says which).
///
/// `partition="views"`: each rank holds a contiguous group of views (`counts[r]` of them on
/// rank `r`; by default as even as possible); the volume is whole and the same on every rank,
/// and the adjoint sums the ranks' back-projections. `partition="slabs"`: each rank holds a
/// slab of the volume along `z` (`counts[r]` slices) and the detector rows of every view in the
/// same proportion (3D geometries with a flat detector and the rotation axis along `z`). A
/// count may be 0: that rank holds nothing and still takes part.
///
/// `domain` and `range` are this rank's shares (`domain_shape`, `range_shape`; which part:
/// `domain_part`, `range_part`, or `full[op.range_slice]`); their `inner`, `norm` and `dist`
/// are the whole problem's, summed over the ranks, so `rodl.cgls(op, x, data_share)` and the
/// other solvers run unchanged on every rank and compute the single-process iterates to
/// rounding. Construction, `op(x)`, `op.adjoint(y)`, the reductions and the solvers are
/// collective: every rank makes the same calls in the same order. Bad input on one rank (a
/// share of the wrong shape, another geometry, an unknown partition) raises
/// `rodl.DistributedError` naming that rank on every rank.
#[pyclass(
    name = "DistributedRayTransform",
    module = "rodl.distributed",
    extends = PyOperator,
    frozen
)]
pub struct PyDistributedRayTransform {
    geometry: PyGeometry,
    ray: Any<Arc<DistributedRayTransform<f32>>, Arc<DistributedRayTransform<f64>>>,
    backend: Backend,
    local_rank: usize,
}

/// rodl's duplicate of the mpi4py communicator `comm` (`None`: `MPI.COMM_WORLD`) and this
/// rank's rank on its node. Collective over `comm`.
#[cfg(feature = "mpi")]
fn adopt(py: Python<'_>, comm: Option<&Bound<'_, PyAny>>) -> PyResult<(Across, usize)> {
    let mpi = py.import("mpi4py.MPI").map_err(|e| {
        PyImportError::new_err(format!(
            "rodl.distributed needs mpi4py, built against the MPI that rodl was built with \
             (`pip install mpi4py`): {e}"
        ))
    })?;
    let comm = match comm {
        Some(c) if !c.is_none() => c.clone(),
        _ => mpi.getattr("COMM_WORLD")?,
    };
    if !comm.is_instance(&mpi.getattr("Intracomm")?)? {
        return Err(type_error(format!(
            "comm must be an mpi4py intra-communicator (MPI.COMM_WORLD, or a split or dup of \
             it), got {}",
            comm.repr()?
        )));
    }
    // Both must speak to the same libmpi: a handle of another MPI would be garbage here.
    let theirs: String = mpi.call_method0("Get_library_version")?.extract()?;
    let ours = mpi::environment::library_version().unwrap_or_default();
    if theirs.trim_end_matches(['\0', '\n', ' ']) != ours.trim_end_matches(['\0', '\n', ' ']) {
        return Err(PyImportError::new_err(format!(
            "mpi4py and rodl use different MPI libraries (mpi4py: {:?}, rodl: {:?}): build \
             mpi4py against the system MPI that rodl links (`pip install --no-binary mpi4py \
             mpi4py`)",
            theirs.lines().next().unwrap_or_default(),
            ours.lines().next().unwrap_or_default()
        )));
    }
    let value: u64 = mpi.call_method1("_handleof", (&comm,))?.extract()?;
    let world = py
        .detach(|| -> rodl::Result<rodl::distributed::MpiComm> {
            let raw = raw_comm(value)?;
            // SAFETY: `raw` is mpi4py's handle of a live intra-communicator of the same
            // libmpi (checked above: same library version), and every rank of it calls this
            // constructor (the caller's contract: construction is collective).
            unsafe { rodl::distributed::MpiComm::from_raw(raw) }
        })
        .py()?;
    let local_rank = world.local_rank();
    Ok((Across::new(world), local_rank))
}

/// Without the `mpi` feature: the error saying how to build it.
#[cfg(not(feature = "mpi"))]
fn adopt(_py: Python<'_>, _comm: Option<&Bound<'_, PyAny>>) -> PyResult<(Across, usize)> {
    Err(PyImportError::new_err(
        "rodl was built without MPI: rodl.distributed needs the Python package built from \
         source with its `mpi` feature, over the system MPI (on Debian `apt-get install \
         libopenmpi-dev openmpi-bin libclang-dev`): `MATURIN_PEP517_ARGS=\"--features mpi\" pip \
         install ./python`, and mpi4py built against the same MPI (`pip install mpi4py`)",
    ))
}

/// mpi4py's integer value of a handle as the `MPI_Comm` type of the MPI at hand (a pointer in
/// Open MPI, an `int` in MPICH).
#[cfg(feature = "mpi")]
fn raw_comm(value: u64) -> rodl::Result<mpi::ffi::MPI_Comm> {
    use mpi::ffi::MPI_Comm;
    let bad = || rodl::Error::invalid(format!("mpi4py's communicator handle {value:#x}"));
    match std::mem::size_of::<MPI_Comm>() {
        // SAFETY: an `MPI_Comm` of 8 bytes (Open MPI's pointer) holds the handle's 8 bytes.
        8 => Ok(unsafe { std::mem::transmute_copy::<u64, MPI_Comm>(&value) }),
        4 => {
            let v = u32::try_from(value)
                .or_else(|_| i32::try_from(value as i64).map(|v| v as u32))
                .map_err(|_| bad())?;
            // SAFETY: an `MPI_Comm` of 4 bytes (MPICH's int) holds the handle's 4 bytes.
            Ok(unsafe { std::mem::transmute_copy::<u32, MPI_Comm>(&v) })
        }
        _ => Err(bad()),
    }
}

/// The checked arguments of a construction.
struct Args {
    space: PySpace,
    geometry: PyGeometry,
    plan: Plan,
    backend: Backend,
}

#[allow(clippy::too_many_arguments)]
fn parse_args(
    across: &Across,
    local_rank: usize,
    space: &Bound<'_, PyAny>,
    geometry: &Bound<'_, PyAny>,
    partition: &Bound<'_, PyAny>,
    counts: Option<&Bound<'_, PyAny>>,
    backend: &Bound<'_, PyAny>,
    threads: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    memory_budget: Option<&Bound<'_, PyAny>>,
    deterministic: &Bound<'_, PyAny>,
) -> PyResult<Args> {
    let space: PySpace = space
        .extract::<PyRef<'_, PySpace>>()
        .map_err(|_| type_error("space must be a rodl.Space (the whole volume)"))?
        .clone();
    let geometry: PyGeometry = geometry
        .extract::<PyRef<'_, PyGeometry>>()
        .map_err(|_| type_error("geometry must be a rodl.Geometry"))?
        .clone();
    let name: String = partition
        .extract()
        .map_err(|_| type_error("partition must be 'views' or 'slabs'"))?;
    let part = match name.trim().to_lowercase().as_str() {
        "views" => Partition::Views,
        "slabs" => Partition::Slabs,
        _ => {
            return Err(value_error(format!(
                "unknown partition {name:?}: use 'views' or 'slabs'"
            )))
        }
    };
    let int = |v: Option<&Bound<'_, PyAny>>, what: &str| -> PyResult<Option<usize>> {
        match v {
            Some(v) if !v.is_none() => {
                let i: i64 = v
                    .extract()
                    .map_err(|_| type_error(format!("{what} must be an integer or None")))?;
                Ok(Some(crate::count::count(what, i)?))
            }
            _ => Ok(None),
        }
    };
    let threads = int(threads, "threads")?;
    let budget = int(memory_budget, "memory_budget")?.map(|b| b as u64);
    let backend: String = backend
        .extract()
        .map_err(|_| type_error("backend must be 'cpu', 'cuda' or 'cuda:N'"))?;
    let deterministic: bool = deterministic
        .extract()
        .map_err(|_| type_error("deterministic must be True or False"))?;
    // One rank per GPU: plain "cuda" is this rank's GPU on its node.
    let device = match int(device, "device")? {
        Some(d) => Some(d),
        None if backend.trim().eq_ignore_ascii_case("cuda") => Some(local_rank),
        None => None,
    };
    let backend = crate::tomo::parse_backend(&backend, threads, device, budget, deterministic)?;
    let n = match part {
        Partition::Views => geometry.inner.vec().num_views(),
        Partition::Slabs => {
            let shape = each!(&space.inner, s => s.shape().py()?.to_vec());
            match shape.as_slice() {
                [_, _, nz] => *nz,
                _ => {
                    return Err(value_error(format!(
                        "a slab partition splits a 3D volume along z, got a volume of shape \
                         {shape:?} (partition by views instead)"
                    )))
                }
            }
        }
    };
    let plan = match counts {
        Some(c) if !c.is_none() => {
            let c: Vec<i64> = c
                .extract()
                .map_err(|_| type_error("counts must be a sequence of integers, one per rank"))?;
            let c = crate::count::counts("counts", &c)?;
            if c.len() != across.size() {
                return Err(value_error(format!(
                    "counts: one count per rank, got {} for {} ranks",
                    c.len(),
                    across.size()
                )));
            }
            if c.iter().sum::<usize>() != n {
                return Err(value_error(format!(
                    "counts {c:?} add up to {}, but the {} has {n}",
                    c.iter().sum::<usize>(),
                    match part {
                        Partition::Views => "geometry has views",
                        Partition::Slabs => "volume has slices along z",
                    }
                )));
            }
            Plan::with_counts(part, &c).py()?
        }
        _ => Plan::even(part, n, across.size()).py()?,
    };
    Ok(Args {
        space,
        geometry,
        plan,
        backend,
    })
}

impl PyDistributedRayTransform {
    fn plan(&self) -> &Plan {
        each!(&self.ray, r => r.plan())
    }

    fn across(&self) -> &Across {
        each!(&self.ray, r => r.across())
    }

    /// A tuple of slices that cuts `part` (axis, range) out of an array of `ndim` axes.
    fn slices<'py>(
        py: Python<'py>,
        ndim: usize,
        part: Option<(usize, std::ops::Range<usize>)>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let items = (0..ndim).map(|k| match &part {
            Some((axis, r)) if *axis == k => PySlice::new(py, r.start as isize, r.end as isize, 1),
            _ => PySlice::full(py),
        });
        PyTuple::new(py, items)
    }
}

#[pymethods]
impl PyDistributedRayTransform {
    #[new]
    #[pyo3(signature = (space, geometry, comm=None, partition=None, counts=None, backend=None, threads=None, device=None, memory_budget=None, deterministic=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        space: &Bound<'_, PyAny>,
        geometry: &Bound<'_, PyAny>,
        comm: Option<&Bound<'_, PyAny>>,
        partition: Option<&Bound<'_, PyAny>>,
        counts: Option<&Bound<'_, PyAny>>,
        backend: Option<&Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        memory_budget: Option<&Bound<'_, PyAny>>,
        deterministic: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let (across, local_rank) = adopt(py, comm)?;
        // Every argument is taken as it comes and checked here, so that a wrong one on any
        // rank is agreed (raised on every rank) before the collective construction.
        let views = pyo3::types::PyString::new(py, "views").into_any();
        let cpu = pyo3::types::PyString::new(py, "cpu").into_any();
        let no = pyo3::types::PyBool::new(py, false).to_owned().into_any();
        let checked = parse_args(
            &across,
            local_rank,
            space,
            geometry,
            partition.filter(|p| !p.is_none()).unwrap_or(&views),
            counts,
            backend.filter(|b| !b.is_none()).unwrap_or(&cpu),
            threads,
            device,
            memory_budget,
            deterministic.filter(|d| !d.is_none()).unwrap_or(&no),
        );
        let args = agreed(py, Some(&across), checked)?;
        let g = args.geometry.inner.clone();
        let (plan, be) = (&args.plan, &args.backend);
        let (inner, ray) = match &args.space.inner {
            Any::F32(s) => {
                let ray = Arc::new(
                    py.detach(|| DistributedRayTransform::new(s, &g, plan, be.clone(), across))
                        .py()?,
                );
                let op: LinOp<f32> = ray.clone();
                (Any::F32(op), Any::F32(ray))
            }
            Any::F64(s) => {
                let ray = Arc::new(
                    py.detach(|| DistributedRayTransform::new(s, &g, plan, be.clone(), across))
                        .py()?,
                );
                let op: LinOp<f64> = ray.clone();
                (Any::F64(op), Any::F64(ray))
            }
        };
        Ok(
            PyClassInitializer::from(PyOperator { inner }).add_subclass(Self {
                geometry: args.geometry,
                ray,
                backend: args.backend,
                local_rank,
            }),
        )
    }

    /// The whole geometry (every rank's views).
    #[getter]
    fn geometry(&self) -> PyGeometry {
        self.geometry.clone()
    }

    /// This rank's backend: `'cpu'` or `'cuda:N'`.
    #[getter]
    fn backend(&self) -> String {
        crate::backend_options::backend_name(&self.backend)
    }

    /// `'views'` or `'slabs'`.
    #[getter]
    fn partition(&self) -> &'static str {
        match self.plan().partition() {
            Partition::Views => "views",
            Partition::Slabs => "slabs",
        }
    }

    /// This process's rank in the communicator.
    #[getter]
    fn rank(&self) -> usize {
        self.across().rank()
    }

    /// The number of ranks.
    #[getter]
    fn size(&self) -> usize {
        self.across().size()
    }

    /// This process's rank among those on its node (the GPU that `backend="cuda"` takes).
    #[getter]
    fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// The number of views (`'views'`) or of slices along `z` (`'slabs'`) of each rank, in
    /// rank order.
    #[getter]
    fn counts(&self) -> Vec<usize> {
        self.plan().ranges().iter().map(|r| r.len()).collect()
    }

    /// Each rank's `(start, stop)` of views (`'views'`) or of slices along `z` (`'slabs'`),
    /// in rank order.
    #[getter]
    fn ranges(&self) -> Vec<(usize, usize)> {
        self.plan()
            .ranges()
            .iter()
            .map(|r| (r.start, r.end))
            .collect()
    }

    /// The part of the data this rank holds, `(axis, start, stop)`: its views (axis 0) by
    /// views, its detector rows (axis 2) by slabs.
    #[getter]
    fn range_part(&self) -> (usize, usize, usize) {
        let (axis, r) = each!(&self.ray, ray => ray.range_part());
        (axis, r.start, r.end)
    }

    /// The part of the volume this rank holds, `(axis, start, stop)` (its slab along `z`), or
    /// `None` when it holds the whole volume (by views).
    #[getter]
    fn domain_part(&self) -> Option<(usize, usize, usize)> {
        each!(&self.ray, ray => ray.domain_part()).map(|(axis, r)| (axis, r.start, r.end))
    }

    /// The slices that cut this rank's share out of the whole data: `data[op.range_slice]`.
    #[getter]
    fn range_slice<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let part = each!(&self.ray, ray => ray.range_part());
        Self::slices(py, self.geometry.inner.ndim(), Some(part))
    }

    /// The slices that cut this rank's share out of the whole volume: `volume[op.domain_slice]`
    /// (all of it by views).
    #[getter]
    fn domain_slice<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let part = each!(&self.ray, ray => ray.domain_part());
        Self::slices(py, self.geometry.inner.ndim(), part)
    }

    fn __repr__(&self) -> String {
        format!(
            "DistributedRayTransform(partition='{}', rank {} of {}, counts {:?}, backend='{}')",
            self.partition(),
            self.rank(),
            self.size(),
            self.counts(),
            self.backend()
        )
    }
}

/// Registers the distributed ray transform (whose construction raises `ImportError` in a
/// build without the `mpi` feature) and `MPI_BUILT`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MPI_BUILT", MPI_BUILT)?;
    m.add_class::<PyDistributedRayTransform>()?;
    Ok(())
}
