//! File input and output: scanner data in (TIFF stacks; NeXus/NXtomo and DXchange HDF5 files
//! with the feature `hdf5`), volumes out (TIFF stacks, HDF5 with the feature `hdf5`, 8-bit PNG
//! pictures).
//!
//! Data in follow rodl's sinogram convention `[angle, u, v]` (see [`FrameStack`] for how a
//! detector image's rows and columns become `v` and `u`) and are read in chunks of frames under
//! the host-memory limit of [`crate::memory`]. A [`Scan`] holds projections, flats, darks,
//! angles and what the file says about the geometry; [`ScanInfo::geometry`] turns the latter
//! into a rodl [`Geometry`](crate::tomo::Geometry) without guessing anything the file lacks.
//!
//! Files are written atomically (a temporary file in the target's directory, renamed onto the
//! target when complete), so a failed write never leaves a partial file behind.

mod file_list;
mod frames;
#[cfg(feature = "hdf5")]
mod hdf5;
mod png;
mod scan;
mod temp_file;
mod tiff_read;
mod tiff_write;

pub use self::file_list::list_stack_files;
pub use self::frames::{
    for_each_chunk, frames_per_chunk, read_all_frames, read_frames, FrameStack, DEFAULT_CHUNK_BYTES,
};
#[cfg(feature = "hdf5")]
pub use self::hdf5::{write_volume_hdf5, Hdf5VolumeWriter};
#[cfg(feature = "hdf5")]
pub use self::hdf5::{
    DxChange, DxFile, Hdf5Layout, Hdf5Scan, NxTomo, NxTomoFile, DX_DARK, DX_DATA, DX_PIXEL_X,
    DX_PIXEL_Y, DX_THETA, DX_WHITE,
};
/// The HDF5 dataset that volumes are written to by default (`write_volume_hdf5`, feature
/// `hdf5`; the `rodl` tool's `--dataset`).
pub const VOLUME_DATASET: &str = "/entry/reconstruction/data";

pub use self::png::{
    encode_gray_png, slice_to_gray8, to_gray8, write_gray_png, write_png, write_png_slice,
    GrayImage, Window,
};
pub use self::scan::{
    BeamChoice, FileValue, Frames, LengthUnit, Scan, ScanFormat, ScanGeometryOptions, ScanInfo,
};
pub use self::tiff_read::{TiffPixel, TiffStack};
pub use self::tiff_write::{write_volume_tiff, TiffSliceFormat, TiffStackWriter, TiffVolume};
