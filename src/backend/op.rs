//! The pointwise (elementwise) operations, each listed once.
//!
//! One table per arity (`map_ops!` for `f(x)` with up to two scalar parameters, `map2_ops!`
//! for `f(x, y)`) declares every operation with its public name and documentation, its parameter
//! check, its kernel opcode, its scalar formula for the host and its formula for the GPU. From
//! that one list come:
//!
//! * the public enums [`Pointwise`] and [`Pointwise2`] (what users pass to
//!   [`Space::pointwise`](crate::Space::pointwise) and friends);
//! * the opcodes [`MapOp`] / [`Map2Op`] (the discriminants are the kernels' `OP` values);
//! * one type per operation (in [`kinds`]) implementing [`MapFn`] / [`Map2Fn`]: its name, its
//!   opcode and its scalar function — the host loops are compiled once per operation through
//!   [`MapOp::visit`] / [`Map2Op::visit`];
//! * the CUDA functions `map1<T, OP>` / `map2<T, OP>` (as the macros `RODL_MAP1` / `RODL_MAP2`,
//!   expanded by `kernels/pointwise.cu` after its helpers) and the case lists `MAP1_OPS` /
//!   `MAP2_OPS` that it is compiled with ([`CUDA_PRELUDE`]).
//!
//! The host and GPU formulas are written in the same order of operations, so that the results
//! agree exactly for the arithmetic operations (the kernels are compiled without fused
//! multiply-add) and to a few units in the last place for `exp`, `ln` and `pow`.

use crate::{Error, Result, Scalar};

/// One operation `out = f(x; a, b)`: its name, opcode and scalar function.
pub(crate) trait MapFn {
    /// The operation's opcode.
    #[allow(dead_code)] // read by the tests and the CUDA backend's messages
    const OP: MapOp;
    /// The operation's name (snake case), for messages.
    #[allow(dead_code)]
    const NAME: &'static str;
    /// `f(x)` with the (checked) parameters `p`.
    fn eval<T: Scalar>(x: T, p: [T; 2]) -> T;
}

/// One operation `out = f(x, y)`: its name, opcode and scalar function.
pub(crate) trait Map2Fn {
    /// The operation's opcode.
    #[allow(dead_code)] // read by the tests and the CUDA backend's messages
    const OP: Map2Op;
    /// The operation's name (snake case), for messages.
    #[allow(dead_code)]
    const NAME: &'static str;
    /// `f(x, y)`.
    fn eval<T: Scalar>(x: T, y: T) -> T;
}

/// Code generic over the operation type, run for a run-time opcode by [`MapOp::visit`].
pub(crate) trait MapVisitor {
    /// The result.
    type Out;
    /// Runs with the operation `F`.
    fn visit<F: MapFn>(self) -> Self::Out;
}

/// Code generic over the operation type, run for a run-time opcode by [`Map2Op::visit`].
pub(crate) trait Map2Visitor {
    /// The result.
    type Out;
    /// Runs with the operation `F`.
    fn visit<F: Map2Fn>(self) -> Self::Out;
}

/// The name of an operation type.
struct NameOf;

impl MapVisitor for NameOf {
    type Out = (MapOp, &'static str);
    fn visit<F: MapFn>(self) -> Self::Out {
        (F::OP, F::NAME)
    }
}

impl Map2Visitor for NameOf {
    type Out = (Map2Op, &'static str);
    fn visit<F: Map2Fn>(self) -> Self::Out {
        (F::OP, F::NAME)
    }
}

impl MapOp {
    /// The operation's name.
    #[allow(dead_code)]
    pub(crate) fn name(self) -> &'static str {
        self.visit(NameOf).1
    }
}

impl Map2Op {
    /// The operation's name.
    #[allow(dead_code)]
    pub(crate) fn name(self) -> &'static str {
        self.visit(NameOf).1
    }
}

/// Binds the parameter names of an operation to the entries of its parameter array.
macro_rules! bind_params {
    ($arr:ident;) => {};
    ($arr:ident; $a:ident) => {
        let $a = $arr[0];
    };
    ($arr:ident; $a:ident, $b:ident) => {
        let $a = $arr[0];
        let $b = $arr[1];
    };
}

/// The parameter array of an operation (unused entries are 0).
macro_rules! pad_params {
    () => {
        [T::zero(), T::zero()]
    };
    ($a:ident) => {
        [$a, T::zero()]
    };
    ($a:ident, $b:ident) => {
        [$a, $b]
    };
}

/// The table of one-tensor operations; see the module documentation.
macro_rules! map_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident: $ty:ty),+))? = $code:literal, $snake:literal,
        $(check($cond:expr, $msg:literal),)?
        host |$x:ident| $rust:expr,
        cuda $cuda:literal;
    )*) => {
        /// An elementwise function of one element, for [`Space::pointwise`](crate::Space::pointwise)
        /// and [`Space::pointwise_inplace`](crate::Space::pointwise_inplace).
        ///
        /// The functions follow IEEE arithmetic (`Sqrt` of a negative number is NaN, `Recip` of 0
        /// is ∞, `Log` of 0 is −∞); `MaxScalar`, `MinScalar` and `Clamp` ignore a NaN operand as
        /// `f64::max` does. On a GPU the arithmetic operations give the host's results exactly;
        /// `Exp`, `Log` and `Pow` agree to a few units in the last place.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum Pointwise<T> {
            $( $(#[$doc])* $name $( ( $( $ty ),+ ) )?, )*
        }

        /// The opcodes of [`Pointwise`]: the discriminant is the `OP` of `kernels/pointwise.cu`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(i32)]
        pub(crate) enum MapOp {
            $( $name = $code, )*
        }

        /// One type per operation of [`Pointwise`] / [`Pointwise2`].
        pub(crate) mod kinds {
            use super::{MapFn, MapOp};
            use crate::Scalar;
            $(
                #[doc = concat!("The operation `", $snake, "`.")]
                pub(crate) struct $name;

                impl MapFn for $name {
                    const OP: MapOp = MapOp::$name;
                    const NAME: &'static str = $snake;
                    #[inline(always)]
                    fn eval<T: Scalar>($x: T, _params: [T; 2]) -> T {
                        bind_params!(_params; $($($p),+)?);
                        $rust
                    }
                }
            )*
        }

        impl MapOp {
            /// Runs `v` with the operation type of this opcode.
            #[inline]
            pub(crate) fn visit<V: MapVisitor>(self, v: V) -> V::Out {
                match self {
                    $( MapOp::$name => v.visit::<kinds::$name>(), )*
                }
            }

            /// Every opcode, in table order.
            #[allow(dead_code)]
            pub(crate) const ALL: &'static [MapOp] = &[$(MapOp::$name),*];
        }

        impl<T: Scalar> Pointwise<T> {
            /// The opcode and parameters, after checking the parameters.
            pub(crate) fn lower(self) -> Result<(MapOp, [T; 2])> {
                match self {
                    $(
                        Pointwise::$name $( ( $($p),+ ) )? => {
                            $( if !($cond) { return Err(Error::invalid(format!($msg))); } )?
                            Ok((MapOp::$name, pad_params!($($($p),+)?)))
                        }
                    )*
                }
            }
        }

        /// The macro `RODL_MAP1` (defines the CUDA function `map1<T, OP>`) and the list `MAP1_OPS(F)`
        /// of its opcodes.
        const CUDA_MAP1: &str = concat!(
            "#define RODL_MAP1 \\\n",
            "template <typename T, int OP> \\\n",
            "__device__ __forceinline__ T map1(T x, T a, T b) { \\\n",
            $( "    if (OP == ", $code, ") { ", $cuda, " } \\\n", )*
            "    return x; \\\n}\n",
            "#define MAP1_OPS(F)", $( " F(", $code, ")", )* "\n",
        );
    };
}

/// The table of two-tensor operations; see the module documentation.
macro_rules! map2_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident = $code:literal, $snake:literal,
        host |$x:ident, $y:ident| $rust:expr,
        cuda $cuda:literal;
    )*) => {
        /// An elementwise function of two elements, for [`Space::pointwise2`](crate::Space::pointwise2).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Pointwise2 {
            $( $(#[$doc])* $name, )*
        }

        /// The opcodes of [`Pointwise2`]: the discriminant is the `OP` of `kernels/pointwise.cu`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(i32)]
        pub(crate) enum Map2Op {
            $( $name = $code, )*
        }

        /// One type per operation of [`Pointwise2`].
        pub(crate) mod kinds2 {
            use super::{Map2Fn, Map2Op};
            use crate::Scalar;
            $(
                #[doc = concat!("The operation `", $snake, "`.")]
                pub(crate) struct $name;

                impl Map2Fn for $name {
                    const OP: Map2Op = Map2Op::$name;
                    const NAME: &'static str = $snake;
                    #[inline(always)]
                    fn eval<T: Scalar>($x: T, $y: T) -> T {
                        $rust
                    }
                }
            )*
        }

        impl Map2Op {
            /// Runs `v` with the operation type of this opcode.
            #[inline]
            pub(crate) fn visit<V: Map2Visitor>(self, v: V) -> V::Out {
                match self {
                    $( Map2Op::$name => v.visit::<kinds2::$name>(), )*
                }
            }

            /// Every opcode, in table order.
            #[allow(dead_code)]
            pub(crate) const ALL: &'static [Map2Op] = &[$(Map2Op::$name),*];
        }

        impl Pointwise2 {
            /// The opcode.
            pub(crate) fn lower(self) -> Map2Op {
                match self {
                    $( Pointwise2::$name => Map2Op::$name, )*
                }
            }
        }

        /// The macro `RODL_MAP2` (defines the CUDA function `map2<T, OP>`) and the list `MAP2_OPS(F)`
        /// of its opcodes.
        const CUDA_MAP2: &str = concat!(
            "#define RODL_MAP2 \\\n",
            "template <typename T, int OP> \\\n",
            "__device__ __forceinline__ T map2(T x, T y) { \\\n",
            $( "    if (OP == ", $code, ") { ", $cuda, " } \\\n", )*
            "    return x; \\\n}\n",
            "#define MAP2_OPS(F)", $( " F(", $code, ")", )* "\n",
        );
    };
}

map_ops! {
    /// `x + a`.
    AddScalar(a: T) = 0, "add_scalar",
        host |x| x + a,
        cuda "return x + a;";
    /// `max(x, a)`.
    MaxScalar(a: T) = 1, "max_scalar",
        host |x| x.max(a),
        cuda "return fmax(x, a);";
    /// `min(x, a)`.
    MinScalar(a: T) = 2, "min_scalar",
        host |x| x.min(a),
        cuda "return fmin(x, a);";
    /// `min(max(x, lo), hi)`, the projection onto `[lo, hi]` (needs `lo ≤ hi`; infinite bounds
    /// are allowed).
    Clamp(lo: T, hi: T) = 3, "clamp",
        check(lo <= hi, "Pointwise::Clamp needs lo <= hi, got [{lo}, {hi}]"),
        host |x| x.max(lo).min(hi),
        cuda "return fmin(fmax(x, a), b);";
    /// `√x`.
    Sqrt = 4, "sqrt",
        host |x| x.sqrt(),
        cuda "return k_sqrt(x);";
    /// `eˣ`.
    Exp = 5, "exp",
        host |x| x.exp(),
        cuda "return k_exp(x);";
    /// The natural logarithm `ln x`.
    Log = 6, "log",
        host |x| x.ln(),
        cuda "return k_log(x);";
    /// The sign: 1 for `x > 0`, −1 for `x < 0`, `x` itself for ±0 and NaN.
    Sign = 7, "sign",
        host |x| if x > T::zero() {
            T::one()
        } else if x < T::zero() {
            -T::one()
        } else {
            x
        },
        cuda "return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : x);";
    /// `x²`.
    Square = 8, "square",
        host |x| x * x,
        cuda "return x * x;";
    /// `1 / x`.
    Recip = 9, "recip",
        host |x| T::one() / x,
        cuda "return (T)1 / x;";
    /// Soft thresholding `sign(x) · max(|x| − t, 0)` (needs `t ≥ 0`): the proximal operator of
    /// `t |·|`.
    SoftThreshold(t: T) = 10, "soft_threshold",
        check(t >= T::zero(), "Pointwise::SoftThreshold needs a threshold >= 0, got {t}"),
        host |x| if x > t {
            x - t
        } else if x < -t {
            x + t
        } else if x.is_nan() {
            x
        } else {
            T::zero()
        },
        cuda "if (x > a) return x - a; if (x < -a) return x + a; return isnan(x) ? x : (T)0;";
    /// `xᵃ` (`powf`).
    Pow(a: T) = 11, "pow",
        host |x| x.powf(a),
        cuda "return k_pow(x, a);";
    /// The Huber function of `|x|` with parameter `γ > 0`: `x²/(2γ)` for `|x| ≤ γ`,
    /// `|x| − γ/2` beyond.
    Huber(g: T) = 12, "huber",
        check(g > T::zero() && g.is_finite(),
            "Pointwise::Huber needs a finite parameter > 0, got {g}"),
        host |x| {
            let m = x.abs();
            if m <= g {
                m * m / (g + g)
            } else {
                m - g * T::of(0.5)
            }
        },
        cuda "const T m = fabs(x); return m <= a ? m * m / (a + a) : m - a * (T)0.5;";
}

map2_ops! {
    /// `max(x, y)`.
    Max = 0, "max",
        host |x, y| x.max(y),
        cuda "return fmax(x, y);";
    /// `min(x, y)`.
    Min = 1, "min",
        host |x, y| x.min(y),
        cuda "return fmin(x, y);";
    /// `x / y` where `y ≠ 0`, 0 where `y = 0`.
    DivOrZero = 2, "div_or_zero",
        host |x, y| if y != T::zero() { x / y } else { T::zero() },
        cuda "return y != (T)0 ? x / y : (T)0;";
    /// `x · ln y`, with 0 where `x = 0` (whatever `y`).
    XLogY = 3, "xlogy",
        host |x, y| if x == T::zero() { T::zero() } else { x * y.ln() },
        cuda "return x == (T)0 ? (T)0 : x * k_log(y);";
    /// The Kullback–Leibler term `x ln(x/y) − x + y` for `x, y > 0`; `y` where `x = 0 ≤ y`;
    /// `+∞` otherwise (SciPy's `kl_div`).
    KlDiv = 4, "kl_div",
        host |x, y| if x.is_nan() || y.is_nan() {
            x + y
        } else if x > T::zero() && y > T::zero() {
            x * (x / y).ln() - x + y
        } else if x == T::zero() && y >= T::zero() {
            y
        } else {
            T::infinity()
        },
        cuda "if (isnan(x) || isnan(y)) return x + y; \
              if (x > (T)0 && y > (T)0) return x * k_log(x / y) - x + y; \
              if (x == (T)0 && y >= (T)0) return y; return k_inf(x);";
}

/// The generated CUDA code that `kernels/pointwise.cu` is compiled after: `map1`, `map2` and
/// their opcode lists, from the tables above.
#[allow(dead_code)]
pub(crate) const CUDA_PRELUDE: [&str; 2] = [CUDA_MAP1, CUDA_MAP2];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opcode_visits_its_own_type() {
        for &op in MapOp::ALL {
            assert_eq!(op.visit(NameOf).0, op);
        }
        for &op in Map2Op::ALL {
            assert_eq!(op.visit(NameOf).0, op);
        }
        assert_eq!(MapOp::SoftThreshold.name(), "soft_threshold");
        assert_eq!(Map2Op::KlDiv.name(), "kl_div");
    }

    #[test]
    fn opcodes_are_the_table_positions() {
        for (i, op) in MapOp::ALL.iter().enumerate() {
            assert_eq!(*op as i32, i as i32);
        }
        for (i, op) in Map2Op::ALL.iter().enumerate() {
            assert_eq!(*op as i32, i as i32);
        }
    }

    #[test]
    fn the_cuda_prelude_lists_every_opcode() {
        let ops: String = (0..MapOp::ALL.len()).map(|i| format!(" F({i})")).collect();
        assert!(CUDA_MAP1.contains(&format!("#define MAP1_OPS(F){ops}\n")));
        let ops: String = (0..Map2Op::ALL.len()).map(|i| format!(" F({i})")).collect();
        assert!(CUDA_MAP2.contains(&format!("#define MAP2_OPS(F){ops}\n")));
    }

    #[test]
    fn parameters_are_checked_when_lowered() {
        assert!(Pointwise::Clamp(1.0, 0.0).lower().is_err());
        assert!(Pointwise::SoftThreshold(-1.0f32).lower().is_err());
        assert!(Pointwise::Huber(f64::INFINITY).lower().is_err());
        assert_eq!(
            Pointwise::Clamp(-1.0, 2.0).lower().unwrap(),
            (MapOp::Clamp, [-1.0, 2.0])
        );
        assert_eq!(
            Pointwise::<f64>::Sqrt.lower().unwrap(),
            (MapOp::Sqrt, [0.0, 0.0])
        );
    }
}
