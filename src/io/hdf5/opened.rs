//! An HDF5 scan file once opened, the same for every layout: the scan's metadata, its flats and
//! darks (read at opening) and its projections (a [`FrameStack`] read in chunks of views).

use std::marker::PhantomData;
use std::path::Path;

use ndarray::ArrayViewMut3;

use super::util::DatasetFrames;
use crate::io::frames::{read_all_frames, FrameStack};
use crate::io::{Frames, Scan, ScanInfo};
use crate::Result;

/// A layout of scan files in HDF5 ([`NxTomo`](super::NxTomo), [`DxChange`](super::DxChange)):
/// where the layout's reader finds the frames, angles and metadata. Sealed.
pub trait Hdf5Layout: sealed::Sealed {
    /// The name of the opened file's type, for `Debug`.
    const NAME: &'static str;
}

pub(super) mod sealed {
    /// Only this module's layouts.
    pub trait Sealed {}
}

/// An HDF5 scan file of layout `L`, opened for reading: [`NxTomoFile`](super::NxTomoFile) or
/// [`DxFile`](super::DxFile), whose `open` functions read the metadata, flats and darks and
/// leave the projections in the file, to be read in chunks of views (as a [`FrameStack`]) or
/// all at once ([`Self::read_scan`]).
pub struct Hdf5Scan<L: Hdf5Layout> {
    info: ScanInfo,
    flats: Frames,
    darks: Frames,
    projections: DatasetFrames,
    layout: PhantomData<L>,
}

impl<L: Hdf5Layout> Hdf5Scan<L> {
    /// The opened file from what its layout's reader found.
    pub(super) fn new(
        info: ScanInfo,
        flats: Frames,
        darks: Frames,
        projections: DatasetFrames,
    ) -> Self {
        Self {
            info,
            flats,
            darks,
            projections,
            layout: PhantomData,
        }
    }

    /// What the file says about the scan.
    pub fn info(&self) -> &ScanInfo {
        &self.info
    }

    /// The flat fields, with their positions where the layout records them (NXtomo: their
    /// frame numbers; DXchange records none).
    pub fn flats(&self) -> &Frames {
        &self.flats
    }

    /// The dark fields, with their positions where the layout records them.
    pub fn darks(&self) -> &Frames {
        &self.darks
    }

    /// Reads all projections (after a memory check) into a [`Scan`].
    pub fn read_scan(mut self) -> Result<Scan> {
        let projections = read_all_frames(&mut self.projections)?;
        Ok(Scan {
            info: self.info,
            projections,
            flats: self.flats,
            darks: self.darks,
        })
    }
}

impl<L: Hdf5Layout> std::fmt::Debug for Hdf5Scan<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(L::NAME)
            .field("info", &self.info)
            .field("flats", &self.flats.len())
            .field("darks", &self.darks.len())
            .finish()
    }
}

impl<L: Hdf5Layout> FrameStack for Hdf5Scan<L> {
    fn source(&self) -> &Path {
        &self.info.path
    }

    fn len(&self) -> usize {
        self.projections.len()
    }

    fn frame_shape(&self) -> [usize; 2] {
        self.projections.frame_shape()
    }

    fn read_into(&mut self, first: usize, out: ArrayViewMut3<'_, f32>) -> Result<()> {
        self.projections.read_into(first, out)
    }

    fn read_rows_into(
        &mut self,
        first: usize,
        rows: std::ops::Range<usize>,
        out: ArrayViewMut3<'_, f32>,
    ) -> Result<()> {
        self.projections.read_rows_into(first, rows, out)
    }
}
