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

/// An HDF5 volume written slab by slab: the file, dataset and attributes of
/// [`write_volume_hdf5`], created in a temporary file next to the target, filled by
/// hyperslab writes of slabs along z ([`Hdf5VolumeWriter::write_slab`]) and renamed onto the
/// target by [`Hdf5VolumeWriter::commit`]. Dropped before that, it removes the temporary
/// file: an error midway leaves no partial file.
///
/// ```
/// use ndarray::Array3;
/// use rodl::io::{Hdf5VolumeWriter, VOLUME_DATASET};
/// let dir = tempfile::tempdir()?;
/// let space = rodl::uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[4, 3, 5])?;
/// let path = dir.path().join("rec.h5");
/// let mut w = Hdf5VolumeWriter::create(&path, VOLUME_DATASET, &space)?;
/// w.write_slab(0, Array3::<f32>::zeros([4, 3, 2]).view())?;
/// w.write_slab(2, Array3::<f32>::ones([4, 3, 3]).view())?;
/// w.commit()?;
/// let file = hdf5::File::open(&path)?;
/// assert_eq!(file.dataset(VOLUME_DATASET)?.shape(), [5, 3, 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Hdf5VolumeWriter {
    path: std::path::PathBuf,
    temp: TempFile,
    file: File,
    ds: ::hdf5::Dataset,
    shape: [usize; 3],
    written: Vec<bool>,
}

impl Hdf5VolumeWriter {
    /// Creates the temporary file with the float32 dataset `dataset` (`[z, y, x]`, with the
    /// attributes of [`write_volume_hdf5`]) of the volume `space` (3D).
    pub fn create<T: Scalar>(
        path: impl AsRef<Path>,
        dataset: &str,
        space: &Space<T>,
    ) -> Result<Self> {
        let path = path.as_ref();
        let shape = space.shape()?.to_vec();
        let [nx, ny, nz] = <[usize; 3]>::try_from(shape.as_slice()).map_err(|_| {
            Error::invalid(format!(
                "Hdf5VolumeWriter needs a 3D space, got shape {shape:?}"
            ))
        })?;
        let name = dataset.trim_matches('/');
        if name.is_empty() || name.split('/').any(str::is_empty) {
            return Err(Error::invalid(format!(
                "{dataset:?} is not an HDF5 dataset path (e.g. {VOLUME_DATASET:?})"
            )));
        }
        let io = |e: &dyn std::fmt::Display| Error::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let min_pt = space.min_pt()?.to_vec();
        let max_pt = space.max_pt()?.to_vec();
        let voxel = space.cell_sides()?;
        let (temp, f) = TempFile::create(path).map_err(|e| io(&e))?;
        drop(f);
        let create = || -> std::result::Result<(File, ::hdf5::Dataset), ::hdf5::Error> {
            let f = File::create(temp.path())?;
            let (groups, leaf) = match name.rsplit_once('/') {
                Some((g, leaf)) => (Some(g), leaf),
                None => (None, name),
            };
            let group = match groups {
                Some(g) => f.create_group(g)?,
                None => f.group("/")?,
            };
            let ds = group
                .new_dataset::<f32>()
                .shape([nz, ny, nx])
                .create(leaf)?;
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
            Ok((f, ds))
        };
        let (file, ds) = create().map_err(|e| io(&e))?;
        Ok(Self {
            path: path.to_path_buf(),
            temp,
            file,
            ds,
            shape: [nx, ny, nz],
            written: vec![false; nz],
        })
    }

    /// Writes the slices `z0 .. z0 + k` from `slab = [nx, ny, k]` (one hyperslab).
    pub fn write_slab(&mut self, z0: usize, slab: ndarray::ArrayView3<'_, f32>) -> Result<()> {
        let [nx, ny, nz] = self.shape;
        let (a, b, k) = slab.dim();
        if (a, b) != (nx, ny) || z0.checked_add(k).is_none_or(|end| end > nz) {
            return Err(Error::shape(
                format!("Hdf5VolumeWriter::write_slab at z = {z0}"),
                &[nx, ny, nz.saturating_sub(z0)],
                &[a, b, k],
            ));
        }
        crate::memory::check_host_array(&[k, ny, nx], 4)?;
        let zyx = Array3::from_shape_fn((k, ny, nx), |(z, y, x)| slab[[x, y, z]]);
        self.ds
            .write_slice(&zyx, ndarray::s![z0..z0 + k, .., ..])
            .map_err(|e| Error::Io {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
        for w in &mut self.written[z0..z0 + k] {
            *w = true;
        }
        Ok(())
    }

    /// The temporary file (for a caller that removes it on a signal).
    pub fn temporary_file(&self) -> &Path {
        self.temp.path()
    }

    /// Closes the file, makes it durable and renames it onto the target; errors unless every
    /// slice was written.
    pub fn commit(self) -> Result<()> {
        let io = |e: &dyn std::fmt::Display| Error::Io {
            path: self.path.clone(),
            message: e.to_string(),
        };
        if let Some(z) = self.written.iter().position(|w| !w) {
            return Err(Error::invalid(format!(
                "{}: slice {z} of the volume was not written",
                self.path.display()
            )));
        }
        drop(self.ds);
        self.file.flush().map_err(|e| io(&e))?;
        self.file.close().map_err(|e| io(&e))?;
        std::fs::File::open(self.temp.path())
            .and_then(|f| f.sync_all())
            .map_err(|e| io(&e))?;
        self.temp.commit(&self.path).map_err(|e| io(&e))
    }
}
