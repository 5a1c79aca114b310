//! Flat- and dark-field normalisation: `(p − dark) / (flat − dark)`.

use ndarray::{Array2, ArrayView2, ArrayViewMut3, Axis, Zip};
use rayon::prelude::*;

use crate::io::Frames;
use crate::storage::Storage;
use crate::{Element, Error, Result};

/// Flat and dark references for normalising projections to transmission,
/// `t = (p − dark) / (flat − dark)`.
///
/// - Several darks are averaged into one dark image.
/// - Flats are averaged group by group: a group is a run of flats taken one after the other
///   (consecutive positions in the acquisition sequence, see [`Frames::positions`]); without
///   positions all flats form one group. A projection taken between two groups gets the linear
///   interpolation of the two groups' mean flats in its position (groups sit at the mean
///   position of their frames); before the first or after the last group, that group's flat.
///   [`FlatField::before_after`] sets up the common case of flats before and after a scan,
///   interpolated by projection index.
/// - A pixel whose `flat − dark` is not positive (a dead or saturated pixel) carries no
///   information: its transmission is set to 1 (no attenuation, so 0 after `−log`) and it is
///   counted in [`FlatFieldReport::bad_pixels`].
///
/// The arithmetic is done in `f64` and rounded once to `f32`.
///
/// ```
/// use ndarray::Array3;
/// use rodl::io::Frames;
/// use rodl::preprocess::FlatField;
/// let flats = Frames { data: Array3::from_elem([2, 4, 3], 110.0), positions: None };
/// let darks = Frames { data: Array3::from_elem([1, 4, 3], 10.0), positions: None };
/// let ff = FlatField::new(&flats, &darks)?;
/// let mut p = Array3::from_elem([5, 4, 3], 60.0f32);
/// let report = ff.apply(p.view_mut(), None)?;
/// assert_eq!(report.bad_pixels, 0);
/// assert!(p.iter().all(|&t| t == 0.5));
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FlatField {
    dark: Array2<f64>,
    /// `(position, mean flat)`, ordered by position.
    groups: Vec<(f64, Array2<f64>)>,
}

/// What [`FlatField::apply`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlatFieldReport {
    /// The number of pixel values (over all projections) whose `flat − dark` was not positive
    /// or not finite, set to 1.
    pub bad_pixels: usize,
}

/// The mean over axis 0 of `frames`, in f64.
fn mean_frame(frames: ndarray::ArrayView3<'_, f32>) -> Array2<f64> {
    let n = frames.shape()[0] as f64;
    let mut sum = Array2::<f64>::zeros([frames.shape()[1], frames.shape()[2]]);
    for f in frames.axis_iter(Axis(0)) {
        Zip::from(&mut sum).and(&f).for_each(|s, &x| *s += x as f64);
    }
    sum.mapv_inplace(|s| s / n);
    sum
}

impl FlatField {
    /// References from `flats` (at least one frame) and `darks` (at least one frame), grouped by
    /// their positions (see [`FlatField`]).
    pub fn new(flats: &Frames, darks: &Frames) -> Result<Self> {
        if darks.is_empty() {
            return Err(Error::invalid(
                "flat-field normalisation needs at least one dark frame (use \
                 FlatField::without_darks for a detector without dark current)",
            ));
        }
        let dark = mean_frame(darks.data.view());
        Self::with_dark(flats, dark)
    }

    /// References from `flats` alone, for a detector whose dark signal is zero: the dark is 0
    /// (an explicit choice of the caller, never a default of the readers).
    pub fn without_darks(flats: &Frames) -> Result<Self> {
        let s = flats.data.shape();
        Self::with_dark(flats, Array2::zeros([s[1], s[2]]))
    }

    /// Flats taken `before` and `after` a scan of `num_projections` projections, interpolated
    /// linearly by projection index (the groups sit just before projection 0 and just after the
    /// last one: positions `−1` and `num_projections`); pass the projections' indices `0, 1, …`
    /// as positions to [`FlatField::apply`] (`None` does that).
    pub fn before_after(
        before: &Frames,
        after: &Frames,
        darks: &Frames,
        num_projections: usize,
    ) -> Result<Self> {
        let mut ff = FlatField::new(before, darks)?;
        let mut ff_after = FlatField::new(after, darks)?;
        if ff.dark.dim() != ff_after.dark.dim() {
            return Err(Error::shape(
                "flats after the scan",
                &[ff.dark.dim().0, ff.dark.dim().1],
                &[ff_after.dark.dim().0, ff_after.dark.dim().1],
            ));
        }
        let first = mean_of_groups(&ff.groups);
        let last = mean_of_groups(&ff_after.groups);
        ff.groups = vec![(-1.0, first), (num_projections as f64, last)];
        ff_after.groups.clear();
        Ok(ff)
    }

    fn with_dark(flats: &Frames, dark: Array2<f64>) -> Result<Self> {
        let n = flats.len();
        if n == 0 {
            return Err(Error::invalid(
                "flat-field normalisation needs at least one flat frame",
            ));
        }
        let shape = [flats.data.shape()[1], flats.data.shape()[2]];
        if dark.dim() != (shape[0], shape[1]) {
            return Err(Error::shape(
                "darks and flats",
                &shape,
                &[dark.dim().0, dark.dim().1],
            ));
        }
        let groups = match &flats.positions {
            None => vec![(0.0, mean_frame(flats.data.view()))],
            Some(pos) => {
                if pos.len() != n {
                    return Err(Error::invalid(format!(
                        "{n} flats but {} positions",
                        pos.len()
                    )));
                }
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_key(|&k| pos[k]);
                let mut groups = Vec::new();
                let mut start = 0;
                for end in 1..=n {
                    if end == n || pos[order[end]] > pos[order[end - 1]] + 1 {
                        let members = &order[start..end];
                        let mut sum = Array2::<f64>::zeros(shape);
                        for &k in members {
                            Zip::from(&mut sum)
                                .and(&flats.data.index_axis(Axis(0), k))
                                .for_each(|s, &x| *s += x as f64);
                        }
                        let m = members.len() as f64;
                        sum.mapv_inplace(|s| s / m);
                        let at = members.iter().map(|&k| pos[k] as f64).sum::<f64>() / m;
                        groups.push((at, sum));
                        start = end;
                    }
                }
                groups
            }
        };
        Ok(Self { dark, groups })
    }

    /// The number of flat groups.
    pub fn num_groups(&self) -> usize {
        self.groups.len()
    }

    /// The positions of the flat groups.
    pub fn group_positions(&self) -> Vec<f64> {
        self.groups.iter().map(|g| g.0).collect()
    }

    /// The mean dark frame `[nu, nv]`.
    pub fn dark(&self) -> ArrayView2<'_, f64> {
        self.dark.view()
    }

    /// Normalises `projections` (`[k, nu, nv]`, raw counts) in place to transmission. With
    /// several flat groups `positions` gives each projection's position (for a chunk: the
    /// chunk's projections' positions); `None` takes the projections' indices `0 .. k`.
    pub fn apply(
        &self,
        mut projections: ArrayViewMut3<'_, f32>,
        positions: Option<&[f64]>,
    ) -> Result<FlatFieldReport> {
        self.check(projections.shape(), positions)?;
        let bad: usize = projections
            .axis_iter_mut(Axis(0))
            .into_par_iter()
            .enumerate()
            .map(|(j, mut proj)| {
                let at = positions.map_or(j as f64, |p| p[j]);
                let (a, b, w) = self.bracket(at);
                let mut bad = 0usize;
                Zip::from(&mut proj)
                    .and(&self.dark)
                    .and(&a.view())
                    .and(&b.view())
                    .for_each(|x, &d, &fa, &fb| {
                        let flat = if w == 0.0 {
                            fa
                        } else {
                            (1.0 - w) * fa + w * fb
                        };
                        let den = flat - d;
                        if den > 0.0 && den.is_finite() {
                            *x = ((*x as f64 - d) / den) as f32;
                        } else {
                            *x = 1.0;
                            bad += 1;
                        }
                    });
                bad
            })
            .sum();
        Ok(FlatFieldReport { bad_pixels: bad })
    }

    /// The two groups around `at` and the weight of the second.
    fn bracket(&self, at: f64) -> (&Array2<f64>, &Array2<f64>, f64) {
        let (a, b, w) = self.bracket_index(at);
        (&self.groups[a].1, &self.groups[b].1, w)
    }

    /// The indices of the two groups around `at` and the weight of the second.
    fn bracket_index(&self, at: f64) -> (usize, usize, f64) {
        let g = &self.groups;
        if g.len() == 1 || !(at > g[0].0) {
            return (0, 0, 0.0);
        }
        let last = g.len() - 1;
        if at >= g[last].0 {
            return (last, last, 0.0);
        }
        let i = g.partition_point(|x| x.0 <= at) - 1;
        let w = (at - g[i].0) / (g[i + 1].0 - g[i].0);
        (i, i + 1, w)
    }

    /// Checks `projections`' shape `[k, nu, nv]` and the positions against the references.
    fn check(&self, shape: &[usize], positions: Option<&[f64]>) -> Result<usize> {
        let &[k, nu, nv] = shape else {
            return Err(Error::invalid(format!(
                "flat-field normalisation needs projections [k, nu, nv], got shape {shape:?}"
            )));
        };
        if (nu, nv) != self.dark.dim() {
            return Err(Error::shape(
                "flat-field normalisation",
                &[k, self.dark.dim().0, self.dark.dim().1],
                &[k, nu, nv],
            ));
        }
        if let Some(p) = positions {
            if p.len() != k {
                return Err(Error::invalid(format!(
                    "{k} projections but {} positions",
                    p.len()
                )));
            }
        }
        Ok(k)
    }

    /// [`FlatField::apply`] on an element of a space (`[k, nu, nv]`, f32) on any device: on a
    /// GPU in one kernel on the device (no host round trip), with the host's f64 arithmetic
    /// (the results are the host's bit for bit).
    pub fn apply_element(
        &self,
        projections: &mut Element<f32>,
        positions: Option<&[f64]>,
    ) -> Result<FlatFieldReport> {
        self.apply_element_log(projections, positions, None)
    }

    /// [`FlatField::apply_element`] followed by [`neg_log`](super::neg_log()) with `floor`,
    /// fused into one pass (one kernel on a GPU): transmission to line integrals.
    pub fn apply_neg_log_element(
        &self,
        projections: &mut Element<f32>,
        positions: Option<&[f64]>,
        floor: f32,
    ) -> Result<FlatFieldReport> {
        self.apply_element_log(
            projections,
            positions,
            Some(super::neg_log::checked_floor(floor)),
        )
    }

    fn apply_element_log(
        &self,
        x: &mut Element<f32>,
        positions: Option<&[f64]>,
        floor: Option<f32>,
    ) -> Result<FlatFieldReport> {
        let k = self.check(x.shape()?, positions)?;
        match x.storage_mut("flat-field normalisation")? {
            Storage::Host(_) => {
                let mut a = x
                    .as_array_mut()?
                    .into_dimensionality::<ndarray::Ix3>()
                    .map_err(|e| Error::invalid(e.to_string()))?;
                let report = self.apply(a.view_mut(), positions)?;
                if let Some(f) = floor {
                    super::neg_log(a, f);
                }
                Ok(report)
            }
            Storage::Cuda(t) => {
                let dark: Vec<f64> = self.dark.iter().copied().collect();
                let groups: Vec<f64> = self
                    .groups
                    .iter()
                    .flat_map(|g| g.1.iter().copied())
                    .collect();
                let mut per_view = Vec::with_capacity(3 * k);
                for j in 0..k {
                    let (a, b, w) = self.bracket_index(positions.map_or(j as f64, |p| p[j]));
                    per_view.extend([a as f64, b as f64, w]);
                }
                let bad = crate::backend::cuda::preprocess::flat_field(
                    t, &dark, &groups, &per_view, floor,
                )?;
                Ok(FlatFieldReport {
                    bad_pixels: bad as usize,
                })
            }
        }
    }
}

/// The mean of the groups' flats (equal weights).
fn mean_of_groups(groups: &[(f64, Array2<f64>)]) -> Array2<f64> {
    let mut sum = groups[0].1.clone();
    for g in &groups[1..] {
        sum += &g.1;
    }
    sum / groups.len() as f64
}
