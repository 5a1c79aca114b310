//! Host vector operations on flat slices, parallel with rayon above a size threshold.

use rayon::prelude::*;

use super::{Binary, Map2Op, MapOp, Reduction, Unary};
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

// ------------------------------------------------------------------------------ pointwise maps
// The formulas below are the reference for `kernels/pointwise.cu`, which evaluates the same
// expressions in the same order.

/// `f(x)` for one opcode; `a`, `b` are the operation's parameters.
#[inline(always)]
pub(crate) fn map1<T: Scalar>(op: MapOp, a: T, b: T, x: T) -> T {
    match op {
        MapOp::AddScalar => x + a,
        MapOp::MaxScalar => x.max(a),
        MapOp::MinScalar => x.min(a),
        MapOp::Clamp => x.max(a).min(b),
        MapOp::Sqrt => x.sqrt(),
        MapOp::Exp => x.exp(),
        MapOp::Log => x.ln(),
        MapOp::Sign => {
            if x > T::zero() {
                T::one()
            } else if x < T::zero() {
                -T::one()
            } else {
                x
            }
        }
        MapOp::Square => x * x,
        MapOp::Recip => T::one() / x,
        MapOp::SoftThreshold => {
            if x > a {
                x - a
            } else if x < -a {
                x + a
            } else if x.is_nan() {
                x
            } else {
                T::zero()
            }
        }
        MapOp::Pow => x.powf(a),
        MapOp::Huber => {
            let m = x.abs();
            if m <= a {
                m * m / (a + a)
            } else {
                m - a * T::of(0.5)
            }
        }
    }
}

/// `f(x, y)` for one opcode.
#[inline(always)]
pub(crate) fn map2<T: Scalar>(op: Map2Op, x: T, y: T) -> T {
    match op {
        Map2Op::Max => x.max(y),
        Map2Op::Min => x.min(y),
        Map2Op::DivOrZero => {
            if y != T::zero() {
                x / y
            } else {
                T::zero()
            }
        }
        Map2Op::XLogY => {
            if x == T::zero() {
                T::zero()
            } else {
                x * y.ln()
            }
        }
        Map2Op::KlDiv => {
            if x.is_nan() || y.is_nan() {
                x + y
            } else if x > T::zero() && y > T::zero() {
                x * (x / y).ln() - x + y
            } else if x == T::zero() && y >= T::zero() {
                y
            } else {
                T::infinity()
            }
        }
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

/// Expands `$body` once per opcode with `$c` bound to that opcode as a constant, so that each
/// loop is compiled for one operation.
macro_rules! per_map_op {
    ($op:expr, $c:ident => $body:expr) => {
        match $op {
            MapOp::AddScalar => {
                const $c: MapOp = MapOp::AddScalar;
                $body
            }
            MapOp::MaxScalar => {
                const $c: MapOp = MapOp::MaxScalar;
                $body
            }
            MapOp::MinScalar => {
                const $c: MapOp = MapOp::MinScalar;
                $body
            }
            MapOp::Clamp => {
                const $c: MapOp = MapOp::Clamp;
                $body
            }
            MapOp::Sqrt => {
                const $c: MapOp = MapOp::Sqrt;
                $body
            }
            MapOp::Exp => {
                const $c: MapOp = MapOp::Exp;
                $body
            }
            MapOp::Log => {
                const $c: MapOp = MapOp::Log;
                $body
            }
            MapOp::Sign => {
                const $c: MapOp = MapOp::Sign;
                $body
            }
            MapOp::Square => {
                const $c: MapOp = MapOp::Square;
                $body
            }
            MapOp::Recip => {
                const $c: MapOp = MapOp::Recip;
                $body
            }
            MapOp::SoftThreshold => {
                const $c: MapOp = MapOp::SoftThreshold;
                $body
            }
            MapOp::Pow => {
                const $c: MapOp = MapOp::Pow;
                $body
            }
            MapOp::Huber => {
                const $c: MapOp = MapOp::Huber;
                $body
            }
        }
    };
}

/// `out = f(x)` elementwise.
pub(crate) fn map<T: Scalar>(op: MapOp, a: T, b: T, x: &[T], out: &mut [T]) {
    per_map_op!(op, OP => run_map(move |v| map1(OP, a, b, v), x, out))
}

/// `x = f(x)` elementwise, in place.
pub(crate) fn map_inplace<T: Scalar>(op: MapOp, a: T, b: T, x: &mut [T]) {
    per_map_op!(op, OP => run_map_inplace(move |v| map1(OP, a, b, v), x))
}

/// `out = f(x, y)` elementwise.
pub(crate) fn map_binary<T: Scalar>(op: Map2Op, x: &[T], y: &[T], out: &mut [T]) {
    match op {
        Map2Op::Max => run_map2(|u, v| map2(Map2Op::Max, u, v), x, y, out),
        Map2Op::Min => run_map2(|u, v| map2(Map2Op::Min, u, v), x, y, out),
        Map2Op::DivOrZero => run_map2(|u, v| map2(Map2Op::DivOrZero, u, v), x, y, out),
        Map2Op::XLogY => run_map2(|u, v| map2(Map2Op::XLogY, u, v), x, y, out),
        Map2Op::KlDiv => run_map2(|u, v| map2(Map2Op::KlDiv, u, v), x, y, out),
    }
}
