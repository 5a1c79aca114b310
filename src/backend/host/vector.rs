//! Host vector operations and pointwise maps on flat slices, parallel with rayon above a size threshold.

use rayon::prelude::*;

use crate::backend::op::{Map2Fn, Map2Op, Map2Visitor, MapFn, MapOp, MapVisitor};
use crate::backend::{Binary, Reduction, Unary};
use crate::Scalar;

/// Elements per rayon task.
const CHUNK: usize = 1 << 14;

pub(crate) fn binary<T: Scalar>(op: Binary<T>, x: &[T], y: &[T], out: &mut [T]) {
    let f = move |o: &mut [T], a: &[T], b: &[T]| match op {
        Binary::Lincomb(s, t) => {
            for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
                *o = s * a + t * b;
            }
        }
        Binary::Mul => {
            for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
                *o = a * b;
            }
        }
        Binary::Div => {
            for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
                *o = a / b;
            }
        }
    };
    if out.len() <= CHUNK {
        f(out, x, y);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .zip(y.par_chunks(CHUNK))
            .for_each(|((o, a), b)| f(o, a, b));
    }
}

/// `y = a x + b y` in place.
pub(crate) fn axpby<T: Scalar>(a: T, x: &[T], b: T, y: &mut [T]) {
    let f = move |yc: &mut [T], xc: &[T]| {
        for (y, &x) in yc.iter_mut().zip(xc) {
            *y = a * x + b * *y;
        }
    };
    if y.len() <= CHUNK {
        f(y, x);
    } else {
        y.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .for_each(|(yc, xc)| f(yc, xc));
    }
}

pub(crate) fn unary<T: Scalar>(op: Unary<T>, x: &[T], out: &mut [T]) {
    let f = move |o: &mut [T], a: &[T]| match op {
        Unary::Scale(s) => o.iter_mut().zip(a).for_each(|(o, &a)| *o = s * a),
        Unary::Abs => o.iter_mut().zip(a).for_each(|(o, &a)| *o = a.abs()),
    };
    if out.len() <= CHUNK {
        f(out, x);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .for_each(|(o, a)| f(o, a));
    }
}

/// `x *= s` in place.
pub(crate) fn scale_inplace<T: Scalar>(s: T, x: &mut [T]) {
    if x.len() <= CHUNK {
        x.iter_mut().for_each(|v| *v *= s);
    } else {
        x.par_chunks_mut(CHUNK)
            .for_each(|c| c.iter_mut().for_each(|v| *v *= s));
    }
}

/// Unweighted reduction in f64. `y` is ignored by `NormSq` and `Sum` (pass `x`).
pub(crate) fn reduce<T: Scalar>(op: Reduction, x: &[T], y: &[T]) -> f64 {
    let f = move |a: &[T], b: &[T]| -> f64 {
        match op {
            Reduction::Inner => a.iter().zip(b).map(|(&a, &b)| a.f64() * b.f64()).sum(),
            Reduction::NormSq => a.iter().map(|&a| a.f64() * a.f64()).sum(),
            Reduction::DistSq => a
                .iter()
                .zip(b)
                .map(|(&a, &b)| {
                    let d = a.f64() - b.f64();
                    d * d
                })
                .sum(),
            Reduction::Sum => a.iter().map(|&a| a.f64()).sum(),
        }
    };
    if x.len() <= CHUNK {
        f(x, y)
    } else {
        x.par_chunks(CHUNK)
            .zip(y.par_chunks(CHUNK))
            .map(|(a, b)| f(a, b))
            .sum()
    }
}

fn run_map<T: Scalar, F: Fn(T) -> T + Sync + Send + Copy>(f: F, x: &[T], out: &mut [T]) {
    let g = move |o: &mut [T], a: &[T]| o.iter_mut().zip(a).for_each(|(o, &a)| *o = f(a));
    if out.len() <= CHUNK {
        g(out, x);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .for_each(|(o, a)| g(o, a));
    }
}

fn run_map_inplace<T: Scalar, F: Fn(T) -> T + Sync + Send + Copy>(f: F, x: &mut [T]) {
    let g = move |c: &mut [T]| c.iter_mut().for_each(|v| *v = f(*v));
    if x.len() <= CHUNK {
        g(x);
    } else {
        x.par_chunks_mut(CHUNK).for_each(g);
    }
}

fn run_map2<T: Scalar, F: Fn(T, T) -> T + Sync + Send + Copy>(
    f: F,
    x: &[T],
    y: &[T],
    out: &mut [T],
) {
    let g = move |o: &mut [T], a: &[T], b: &[T]| {
        for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
            *o = f(a, b);
        }
    };
    if out.len() <= CHUNK {
        g(out, x, y);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .zip(y.par_chunks(CHUNK))
            .for_each(|((o, a), b)| g(o, a, b));
    }
}

/// `out = F(x)` elementwise.
struct MapInto<'a, T> {
    p: [T; 2],
    x: &'a [T],
    out: &'a mut [T],
}

impl<T: Scalar> MapVisitor for MapInto<'_, T> {
    type Out = ();
    fn visit<F: MapFn>(self) {
        let p = self.p;
        run_map(move |v| F::eval(v, p), self.x, self.out)
    }
}

/// `x = F(x)` elementwise, in place.
struct MapInPlace<'a, T> {
    p: [T; 2],
    x: &'a mut [T],
}

impl<T: Scalar> MapVisitor for MapInPlace<'_, T> {
    type Out = ();
    fn visit<F: MapFn>(self) {
        let p = self.p;
        run_map_inplace(move |v| F::eval(v, p), self.x)
    }
}

/// `out = F(x, y)` elementwise.
struct Map2Into<'a, T> {
    x: &'a [T],
    y: &'a [T],
    out: &'a mut [T],
}

impl<T: Scalar> Map2Visitor for Map2Into<'_, T> {
    type Out = ();
    fn visit<F: Map2Fn>(self) {
        run_map2(F::eval, self.x, self.y, self.out)
    }
}

/// `out = f(x)` elementwise (one loop compiled per operation).
pub(crate) fn map<T: Scalar>(op: MapOp, p: [T; 2], x: &[T], out: &mut [T]) {
    op.visit(MapInto { p, x, out })
}

/// `x = f(x)` elementwise, in place.
pub(crate) fn map_inplace<T: Scalar>(op: MapOp, p: [T; 2], x: &mut [T]) {
    op.visit(MapInPlace { p, x })
}

/// `out = f(x, y)` elementwise.
pub(crate) fn map_binary<T: Scalar>(op: Map2Op, x: &[T], y: &[T], out: &mut [T]) {
    op.visit(Map2Into { x, y, out })
}
