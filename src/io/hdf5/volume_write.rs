//! Volumes out as HDF5: one dataset `[z, y, x]` of 32-bit floats with the volume's extent as
//! attributes (see [`write_volume_hdf5`]).

use std::path::Path;

use ::hdf5::File;
use ndarray::{Array3, Ix3};

use crate::io::temp_file::TempFile;
use crate::io::VOLUME_DATASET;
use crate::{Element, Error, Result, Scalar, Space};

/// Writes a 3D host element `[x, y, z]` of the discretised space `space` to a new HDF5 file
/// `path` as the float32 dataset
/// `dataset` (e.g. [`VOLUME_DATASET`]; its parent groups are created), stored `[z, y, x]`:
/// slice `z` is one contiguous `y × x` image, the layout of tomopy, HTTomo and the ESRF tools,
/// which viewers such as silx show slice by slice. The dataset's attributes record the
/// orientation and the extent in rodl's `[x, y, z]` order: `axes = "z,y,x"`, `min_pt`,
/// `max_pt` and `voxel_size` (world units), and `rodl_layout = "volume [z, y, x]"`.
///
/// The file is written to a temporary file next to `path` and renamed onto it once complete, so
/// an error (a full disk, a file-size limit) never leaves a partial file behind; an existing
/// file at `path` is replaced.
///
/// ```
/// use rodl::io::{write_volume_hdf5, VOLUME_DATASET};
/// let dir = tempfile::tempdir()?;
/// let space = rodl::uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[4, 3, 2])?;
/// let x = space.element_from_vec((0..24).map(|i| i as f32).collect())?;
/// let path = dir.path().join("rec.h5");
/// write_volume_hdf5(&path, VOLUME_DATASET, &x, &space)?;
/// let file = hdf5::File::open(&path)?;
/// let data = file.dataset(VOLUME_DATASET)?.read_raw::<f32>()?;
/// assert_eq!(file.dataset(VOLUME_DATASET)?.shape(), [2, 3, 4]);
/// assert_eq!(data[1], 2.0); // [z=0, y=0, x=1] is x[1, 0, 0] = 1·3·2 + 0
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_volume_hdf5<T: Scalar>(
    path: impl AsRef<Path>,
    dataset: &str,
    volume: &Element<T>,
    space: &Space<T>,
) -> Result<()> {
    let path = path.as_ref();
    let a = volume.as_array()?;
    let shape = a.shape().to_vec();
    let expected = space.shape()?;
    if expected != shape.as_slice() {
        return Err(Error::shape("write_volume_hdf5", expected, &shape));
    }
    let a = a.into_dimensionality::<Ix3>().map_err(|_| {
        Error::invalid(format!(
            "write_volume_hdf5 needs a 3D element, got shape {shape:?}"
        ))
    })?;
    let name = dataset.trim_matches('/');
    if name.is_empty() || name.split('/').any(str::is_empty) {
        return Err(Error::invalid(format!(
            "{dataset:?} is not an HDF5 dataset path (e.g. {VOLUME_DATASET:?})"
        )));
    }
    let min_pt = space.min_pt()?.to_vec();
    let max_pt = space.max_pt()?.to_vec();
    let voxel = space.cell_sides()?;
    let (nx, ny, nz) = a.dim();
    crate::memory::check_host_array(&[nz, ny, nx], 4)?;
    let zyx = Array3::from_shape_fn((nz, ny, nx), |(z, y, x)| a[[x, y, z]].f64() as f32);
    let io = |e: &dyn std::fmt::Display| Error::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let (temp, file) = TempFile::create(path).map_err(|e| io(&e))?;
    drop(file);
    let write = || -> std::result::Result<(), ::hdf5::Error> {
        let f = File::create(temp.path())?;
        let (groups, leaf) = match name.rsplit_once('/') {
            Some((g, leaf)) => (Some(g), leaf),
            None => (None, name),
        };
        let group = match groups {
            Some(g) => f.create_group(g)?,
            None => f.group("/")?,
        };
        let ds = group.new_dataset_builder().with_data(&zyx).create(leaf)?;
        let text: ::hdf5::types::VarLenUnicode = "z,y,x".parse().map_err(|_| "axes")?;
        ds.new_attr::<::hdf5::types::VarLenUnicode>()
            .create("axes")?
            .write_scalar(&text)?;
        let layout: ::hdf5::types::VarLenUnicode =
            "volume [z, y, x]".parse().map_err(|_| "layout")?;
        ds.new_attr::<::hdf5::types::VarLenUnicode>()
            .create("rodl_layout")?
            .write_scalar(&layout)?;
        for (key, v) in [
            ("min_pt", &min_pt),
            ("max_pt", &max_pt),
            ("voxel_size", &voxel),
        ] {
            ds.new_attr::<f64>().shape([3]).create(key)?.write(v)?;
        }
        f.flush()?;
        f.close()?;
        Ok(())
    };
    write().map_err(|e| io(&e))?;
    // libhdf5 does not fsync: make the data durable before the rename makes them visible.
    std::fs::File::open(temp.path())
        .and_then(|f| f.sync_all())
        .map_err(|e| io(&e))?;
    temp.commit(path).map_err(|e| io(&e))
}
