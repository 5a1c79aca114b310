//! The per-view vector form of a geometry, which every projector consumes.

use std::sync::Arc;

use super::detector::{Detector, DetectorFrame};
use crate::{Error, Result};

/// How the rays of a view are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beam {
    /// All rays of a view are parallel to [`View::src`] (a direction).
    Parallel,
    /// All rays of a view start at the point [`View::src`] (fan beam in 2D, cone beam in 3D).
    Point,
}

/// One view: the ray source (or ray direction) and the detector's placement.
///
/// On a flat detector, pixel `(i, j)` has its centre at
/// `det_center + (i − (nu − 1)/2) · det_u + (j − (nv − 1)/2) · det_v`, so `det_u` and `det_v`
/// are the pixel-spacing vectors (like ASTRA's `*_vec` geometries). In 2D the third components
/// and `det_v` are unused (keep them 0). On a curved detector ([`VecGeometry::with_detector`])
/// the same vectors are the frame at the centre pixel: `det_center` is its point, `det_u` and
/// `det_v` the tangents there with the pixel pitch as arc length (like ASTRA's `cyl_cone_vec`);
/// see [`Detector`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Source position (point beams) or ray direction (parallel beams).
    pub src: [f64; 3],
    /// Centre of the detector.
    pub det_center: [f64; 3],
    /// Vector from one detector pixel to the next along u.
    pub det_u: [f64; 3],
    /// Vector from one detector pixel to the next along v (3D only).
    pub det_v: [f64; 3],
}

/// A general geometry given view by view: for real scanners, and the form every other geometry
/// kind converts to.
///
/// ```
/// use rodl::tomo::{Beam, VecGeometry, View};
/// let view = View { src: [0.0, 1.0, 0.0], det_center: [0.0; 3], det_u: [0.1, 0.0, 0.0], det_v: [0.0; 3] };
/// let g = VecGeometry::new(2, Beam::Parallel, &[16], vec![view; 3])?;
/// assert_eq!(g.num_views(), 3);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct VecGeometry {
    ndim: usize,
    beam: Beam,
    det_shape: [usize; 2],
    views: Vec<View>,
    detector: Detector,
    /// Per-view frames and pitches of a curved detector.
    curved: Option<Arc<Curved>>,
}

/// What the ray set-up of a curved detector needs per view.
#[derive(Debug, PartialEq)]
struct Curved {
    frames: Vec<DetectorFrame>,
    /// Pixel pitch (arc length) along u and v.
    pitch: Vec<[f64; 2]>,
    /// A sphere's latitude of the centre row in the frames (radians; 0 when the frames sit at
    /// the centre pixel, as [`VecGeometry::with_detector`] makes them).
    lat0: f64,
}

impl Curved {
    /// [`VecGeometry::ray`] on the curved detector of `g`.
    #[inline]
    fn ray(&self, g: &VecGeometry, view: usize, iu: usize, iv: usize) -> ([f64; 3], [f64; 3]) {
        let v = &g.views[view];
        let cu = iu as f64 - 0.5 * (g.nu() as f64 - 1.0);
        let cv = iv as f64 - 0.5 * (g.nv() as f64 - 1.0);
        let [lu, lv] = self.pitch[view];
        let sv = cv * lv + self.lat0 * g.detector.radius().unwrap_or(0.0);
        let q = g
            .detector
            .pixel(&self.frames[view], cu * lu, sv, cv, &v.det_v, g.ndim);
        let mut d = [0.0; 3];
        for k in 0..g.ndim {
            d[k] = q[k] - v.src[k];
        }
        (q, d)
    }
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

impl VecGeometry {
    /// A vector geometry in `ndim` (2 or 3) dimensions with detector shape `[nu]` (2D) or
    /// `[nu, nv]` (3D).
    pub fn new(ndim: usize, beam: Beam, det_shape: &[usize], views: Vec<View>) -> Result<Self> {
        if ndim != 2 && ndim != 3 {
            return Err(Error::Geometry(format!("ndim must be 2 or 3, got {ndim}")));
        }
        if det_shape.len() != ndim - 1 || det_shape.contains(&0) {
            return Err(Error::Geometry(format!(
                "a {ndim}D geometry needs {} non-zero detector sizes, got {det_shape:?}",
                ndim - 1
            )));
        }
        if views.is_empty() {
            return Err(Error::Geometry("a geometry needs at least one view".into()));
        }
        let used = |a: [f64; 3]| if ndim == 2 { [a[0], a[1], 0.0] } else { a };
        for (k, v) in views.iter().enumerate() {
            let all = [v.src, v.det_center, v.det_u, v.det_v];
            if all.iter().flatten().any(|x| !x.is_finite()) {
                return Err(Error::Geometry(format!("view {k} has a non-finite entry")));
            }
            if norm(used(v.det_u)) == 0.0 || (ndim == 3 && norm(v.det_v) == 0.0) {
                return Err(Error::Geometry(format!(
                    "view {k} has a zero detector axis"
                )));
            }
            if beam == Beam::Parallel && norm(used(v.src)) == 0.0 {
                return Err(Error::Geometry(format!(
                    "view {k} has a zero ray direction"
                )));
            }
        }
        let det_shape = if ndim == 2 {
            [det_shape[0], 1]
        } else {
            [det_shape[0], det_shape[1]]
        };
        Ok(Self {
            ndim,
            beam,
            det_shape,
            views,
            detector: Detector::Flat,
            curved: None,
        })
    }

    /// The same views on the detector surface `detector` (the views' vectors become the frame
    /// at each centre pixel, see [`View`]; the surface curves towards the source). Errors for
    /// curved detectors with parallel beams, an invalid radius, non-orthogonal `det_u`/`det_v`,
    /// and a radius too small for the detector's span (more than a full circle along u, more
    /// than a half circle along v of a sphere). As in ODL, pixels may lie beside or behind the
    /// source (a strongly curved detector): their rays are the lines through source and pixel.
    ///
    /// ```
    /// use rodl::tomo::{Beam, Detector, VecGeometry, View};
    /// let view = View { src: [0.0, -4.0, 0.0], det_center: [0.0, 2.0, 0.0], det_u: [0.1, 0.0, 0.0], det_v: [0.0; 3] };
    /// let g = VecGeometry::new(2, Beam::Point, &[16], vec![view; 3])?
    ///     .with_detector(Detector::Cylindrical { radius: 6.0 })?;
    /// let (q, _) = g.ray(0, 0, 0);
    /// assert!(((q[0] * q[0] + (q[1] + 4.0).powi(2)).sqrt() - 6.0).abs() < 1e-12); // on the arc
    /// assert!(VecGeometry::new(2, Beam::Point, &[16], vec![view; 3])?
    ///     .with_detector(Detector::Cylindrical { radius: 0.2 }).is_err()); // 1.6 > 2π · 0.2
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn with_detector(mut self, detector: Detector) -> Result<Self> {
        detector.check(self.ndim)?;
        self.detector = detector;
        self.curved = None;
        let Some(radius) = detector.radius() else {
            return Ok(self);
        };
        if self.beam == Beam::Parallel {
            return Err(Error::Geometry(
                "a curved detector needs a point source (fan or cone beam)".into(),
            ));
        }
        let ndim = self.ndim;
        let (nu, nv) = (self.nu(), self.nv());
        let mut frames = Vec::with_capacity(self.views.len());
        let mut pitch = Vec::with_capacity(self.views.len());
        for (k, v) in self.views.iter().enumerate() {
            let (lu, lv) = (norm(v.det_u), norm(v.det_v));
            if ndim == 3 {
                let cos =
                    (v.det_u[0] * v.det_v[0] + v.det_u[1] * v.det_v[1] + v.det_u[2] * v.det_v[2])
                        / (lu * lv);
                if cos.abs() > 1e-9 {
                    return Err(Error::Geometry(format!(
                        "view {k}: a curved detector needs orthogonal det_u and det_v"
                    )));
                }
            }
            // Half the span, in radians, from the centre pixel to the outer pixel edge.
            let half = |n: usize, l: f64| 0.5 * n as f64 * l / radius;
            if half(nu, lu) > std::f64::consts::PI {
                return Err(Error::Geometry(format!(
                    "view {k}: the detector's curvature radius {radius} is too small for its \
                     width {}: it would span more than a full circle",
                    nu as f64 * lu
                )));
            }
            if matches!(detector, Detector::Spherical { .. })
                && half(nv, lv) > std::f64::consts::FRAC_PI_2
            {
                return Err(Error::Geometry(format!(
                    "view {k}: the spherical detector's radius {radius} is too small for its \
                     height {}: it would span more than a half circle",
                    nv as f64 * lv
                )));
            }
            let frame = DetectorFrame::of_view(ndim, v.det_center, v.det_u, v.det_v, Some(v.src));
            frames.push(frame);
            pitch.push([lu, lv]);
        }
        let curved = Curved {
            frames,
            pitch,
            lat0: 0.0,
        };
        self.curved = Some(Arc::new(curved));
        Ok(self)
    }

    /// The views `views` (in range) of this geometry, with their detector frames.
    pub(crate) fn select(&self, views: std::ops::Range<usize>) -> Result<Self> {
        let mut g = Self::new(
            self.ndim,
            self.beam,
            &self.det_shape(),
            self.views[views.clone()].to_vec(),
        )?;
        g.detector = self.detector;
        g.curved = self.curved.as_ref().map(|c| {
            Arc::new(Curved {
                frames: c.frames[views.clone()].to_vec(),
                pitch: c.pitch[views.clone()].to_vec(),
                lat0: c.lat0,
            })
        });
        Ok(g)
    }

    /// A curved detector given by its frames (one per view, at the centre column's point of
    /// latitude 0 for a sphere whose centre row has latitude `lat0`, else at the centre
    /// pixel) and arc-length pitches, for the standard constructors (which check the spans).
    pub(crate) fn with_frames(
        mut self,
        detector: Detector,
        frames: Vec<DetectorFrame>,
        pitch: [f64; 2],
        lat0: f64,
    ) -> Result<Self> {
        detector.check(self.ndim)?;
        if frames.len() != self.views.len() || !detector.is_curved() {
            return Err(Error::Geometry(
                "a curved detector needs one frame per view".into(),
            ));
        }
        let n = frames.len();
        self.detector = detector;
        self.curved = Some(Arc::new(Curved {
            frames,
            pitch: vec![pitch; n],
            lat0,
        }));
        Ok(self)
    }

    /// The detector surface.
    pub fn detector(&self) -> Detector {
        self.detector
    }

    /// What a projector that evaluates the curved surface itself needs of view `view` (the
    /// CUDA kernels): the frame's reference point, `e_u`, `e_v` and normal, then the pitches
    /// (arc lengths) along u and v: the numbers [`VecGeometry::ray`] reads. `None` for a flat
    /// detector or a view out of range.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn curved_frame_words(&self, view: usize) -> Option<[f64; 14]> {
        let c = self.curved.as_ref()?;
        let f = c.frames.get(view)?;
        let [lu, lv] = c.pitch[view];
        let mut w = [0.0; 14];
        for (k, part) in [f.center, f.e_u, f.e_v, f.normal].iter().enumerate() {
            w[3 * k..3 * k + 3].copy_from_slice(part);
        }
        w[12] = lu;
        w[13] = lv;
        Some(w)
    }

    /// A spherical detector's latitude of its frames' reference point (radians; 0 for the
    /// other detectors and for frames at the centre pixel).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn curved_lat0(&self) -> f64 {
        self.curved.as_ref().map_or(0.0, |c| c.lat0)
    }

    /// The frame of view `view`'s detector, as [`Detector`] evaluates it: at the centre pixel
    /// (for a sphere whose rows are not centred on its equator, ODL's latitudes through
    /// [`Geometry::cone_curved`](super::Geometry::cone_curved): at the centre column's point
    /// on the equator).
    pub fn frame(&self, view: usize) -> Option<DetectorFrame> {
        let v = self.views.get(view)?;
        Some(match &self.curved {
            Some(c) => c.frames[view],
            None => DetectorFrame::of_view(self.ndim, v.det_center, v.det_u, v.det_v, None),
        })
    }

    /// Number of space dimensions (2 or 3).
    pub fn ndim(&self) -> usize {
        self.ndim
    }
    /// Parallel or point-source beams.
    pub fn beam(&self) -> Beam {
        self.beam
    }
    /// Detector pixels along u.
    pub fn nu(&self) -> usize {
        self.det_shape[0]
    }
    /// Detector pixels along v (1 in 2D).
    pub fn nv(&self) -> usize {
        self.det_shape[1]
    }
    /// Detector shape: `[nu]` in 2D, `[nu, nv]` in 3D.
    pub fn det_shape(&self) -> Vec<usize> {
        self.det_shape[..self.ndim - 1].to_vec()
    }
    /// The views.
    pub fn views(&self) -> &[View] {
        &self.views
    }
    /// Number of views.
    pub fn num_views(&self) -> usize {
        self.views.len()
    }
    /// The ray through the centre of detector pixel `(iu, iv)` of view `view` (no bounds check;
    /// `iv = 0` in 2D): a point on it (the pixel centre) and its direction (not normalised;
    /// towards the detector).
    #[inline]
    pub fn ray(&self, view: usize, iu: usize, iv: usize) -> ([f64; 3], [f64; 3]) {
        if let Some(c) = &self.curved {
            return c.ray(self, view, iu, iv);
        }
        let v = &self.views[view];
        let cu = iu as f64 - 0.5 * (self.nu() as f64 - 1.0);
        let cv = iv as f64 - 0.5 * (self.nv() as f64 - 1.0);
        let mut q = [0.0; 3];
        let mut d = [0.0; 3];
        for k in 0..self.ndim {
            q[k] = v.det_center[k] + cu * v.det_u[k] + cv * v.det_v[k];
            d[k] = match self.beam {
                Beam::Parallel => v.src[k],
                Beam::Point => q[k] - v.src[k],
            };
        }
        (q, d)
    }

    /// Shape of projection data: `[views, nu]` or `[views, nu, nv]`.
    pub fn data_shape(&self) -> Vec<usize> {
        let mut s = vec![self.views.len()];
        s.extend(self.det_shape());
        s
    }
}
