//! HDF5 scan files (feature `hdf5`, over the system libhdf5 through `hdf5-metno`): NeXus
//! NXtomo ([`NxTomoFile`]) and Data Exchange ([`DxFile`]); volumes out ([`write_volume_hdf5`]).

mod dxchange;
mod nxtomo;
mod opened;
mod util;
mod volume_write;

pub use dxchange::{
    DxChange, DxFile, DX_DARK, DX_DATA, DX_PIXEL_X, DX_PIXEL_Y, DX_THETA, DX_WHITE,
};
pub use nxtomo::{NxTomo, NxTomoFile};
pub use opened::{Hdf5Layout, Hdf5Scan};
pub use volume_write::{write_volume_hdf5, Hdf5VolumeWriter};
