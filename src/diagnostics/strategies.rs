//! proptest strategies for random spaces and elements, so that a user's adjointness property test
//! is a few lines (behind the `proptest` feature):
//!
//! ```
//! use proptest::prelude::*;
//! use rodl::diagnostics::strategies::{discr_space, element_pair};
//! use rodl::{Gradient, LinearOperator, Operator};
//!
//! proptest!(ProptestConfig::with_cases(8), |((space, seed) in (discr_space::<f64>(1..=3, 1..=6), any::<u64>()))| {
//!     let grad = Gradient::new(space).unwrap();
//!     let report = rodl::check_adjoint(&grad, 2, seed).unwrap();
//!     prop_assert!(report.max_rel_error < 1e-12);
//! });
//! # let _ = element_pair::<f64>;
//! ```

use proptest::collection::vec;
use proptest::prelude::*;

use crate::{uniform_discr, weighted_rn, Element, Scalar, Space};

/// A random shape with `ndim` axes in the given range and axis lengths in `len`.
pub fn shape(
    ndim: std::ops::RangeInclusive<usize>,
    len: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Vec<usize>> {
    ndim.prop_flat_map(move |d| vec(len.clone(), d))
}

/// A random `uniform_discr` space: random shape, random box (min in [-5, 5], extent in [0.1, 10]).
pub fn discr_space<T: Scalar>(
    ndim: std::ops::RangeInclusive<usize>,
    len: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Space<T>> {
    shape(ndim, len).prop_flat_map(|s| {
        let d = s.len();
        (Just(s), vec(-5.0f64..5.0, d), vec(0.1f64..10.0, d)).prop_map(|(s, lo, ext)| {
            let hi: Vec<f64> = lo.iter().zip(&ext).map(|(l, e)| l + e).collect();
            uniform_discr::<T>(&lo, &hi, &s).expect("valid random partition")
        })
    })
}

/// A random weighted tensor space: random shape, weight in [0.01, 100].
pub fn weighted_space<T: Scalar>(
    ndim: std::ops::RangeInclusive<usize>,
    len: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Space<T>> {
    (shape(ndim, len), -2.0f64..2.0)
        .prop_map(|(s, lw)| weighted_rn::<T>(&s, 10f64.powf(lw)).expect("valid random space"))
}

/// A random tensor space: either a [`discr_space`] or a [`weighted_space`].
pub fn tensor_space<T: Scalar>(
    ndim: std::ops::RangeInclusive<usize>,
    len: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Space<T>> {
    prop_oneof![
        discr_space::<T>(ndim.clone(), len.clone()),
        weighted_space::<T>(ndim, len),
    ]
}

/// A random product space with `nparts` parts, each a random [`tensor_space`].
pub fn product_space<T: Scalar>(
    nparts: std::ops::RangeInclusive<usize>,
    ndim: std::ops::RangeInclusive<usize>,
    len: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Space<T>> {
    vec(tensor_space::<T>(ndim, len), nparts)
        .prop_map(|parts| Space::product(parts).expect("parts share the CPU device"))
}

/// A random space from `spaces` together with two random elements of it.
///
/// ```
/// use proptest::prelude::*;
/// use rodl::diagnostics::strategies::{space_and_elements, tensor_space};
///
/// proptest!(ProptestConfig::with_cases(8), |((s, x, y) in space_and_elements(tensor_space::<f64>(1..=2, 1..=4)))| {
///     prop_assert!((s.inner(&x, &y).unwrap() - s.inner(&y, &x).unwrap()).abs() < 1e-12);
/// });
/// ```
pub fn space_and_elements<T: Scalar, S: Strategy<Value = Space<T>>>(
    spaces: S,
) -> impl Strategy<Value = (Space<T>, Element<T>, Element<T>)> {
    spaces.prop_flat_map(|s| {
        (element(s.clone()), element(s.clone())).prop_map(move |(x, y)| (s.clone(), x, y))
    })
}

/// A random element of `space`, entries uniform in [-1, 1].
pub fn element<T: Scalar>(space: Space<T>) -> impl Strategy<Value = Element<T>> {
    let n = space.size();
    vec(-1.0f64..1.0, n).prop_map(move |v| fill(&space, &v))
}

/// A pair of random elements of `space`.
pub fn element_pair<T: Scalar>(space: Space<T>) -> impl Strategy<Value = (Element<T>, Element<T>)> {
    (element(space.clone()), element(space))
}

fn fill<T: Scalar>(space: &Space<T>, v: &[f64]) -> Element<T> {
    match space.parts() {
        Ok(parts) => {
            let mut off = 0;
            let elems = parts
                .iter()
                .map(|p| {
                    let n = p.size();
                    let e = fill(p, &v[off..off + n]);
                    off += n;
                    e
                })
                .collect();
            space.product_element(elems).expect("parts match the space")
        }
        Err(_) => space
            .element_from_vec(v.iter().map(|&x| T::of(x)).collect())
            .expect("length matches the space"),
    }
}
