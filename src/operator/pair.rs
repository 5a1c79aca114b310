//! The operator impls shared by a linear operator and its adjoint when both wrap one
//! `Arc<Inner>` that has `domain`, `range` and `norm` fields and `forward` / `backward` methods
//! (the ray transform and its multi-device form). Both can be recovered from a shared handle
//! through [`Operator::as_any`](crate::Operator::as_any).

/// Implements `Operator` and `LinearOperator` for a forward type `$fwd` and its adjoint `$bwd`,
/// both `{ inner: Arc<$inner<T>> }`: `$fwd` maps `inner.domain → inner.range` with
/// `inner.forward`, `$bwd` the other way with `inner.backward`; each is the other's adjoint and
/// both share `inner.norm`.
///
/// With a third argument `batched`, both also have a [`BatchedOperator`](crate::BatchedOperator)
/// form from `inner.max_batch()`, `inner.forward_batch` and `inner.backward_batch`, offered by
/// `Operator::batched` where `inner.max_batch() > 1`.
macro_rules! forward_backward_pair {
    ($fwd:ident, $bwd:ident, batched) => {
        $crate::operator::forward_backward_pair!(@pair $fwd, $bwd, {
            fn batched(&self) -> Option<&dyn $crate::BatchedOperator<T>> {
                (self.inner.max_batch() > 1).then_some(self as &dyn $crate::BatchedOperator<T>)
            }
        });

        impl<T: $crate::Scalar> $crate::BatchedOperator<T> for $fwd<T> {
            fn max_batch(&self) -> usize {
                self.inner.max_batch()
            }
            fn apply_batch(
                &self,
                x: &$crate::Element<T>,
                out: &mut $crate::Element<T>,
                batch: usize,
            ) -> $crate::Result<()> {
                self.inner.forward_batch(x, out, batch)
            }
        }

        impl<T: $crate::Scalar> $crate::BatchedOperator<T> for $bwd<T> {
            fn max_batch(&self) -> usize {
                self.inner.max_batch()
            }
            fn apply_batch(
                &self,
                y: &$crate::Element<T>,
                out: &mut $crate::Element<T>,
                batch: usize,
            ) -> $crate::Result<()> {
                self.inner.backward_batch(y, out, batch)
            }
        }
    };
    ($fwd:ident, $bwd:ident) => {
        $crate::operator::forward_backward_pair!(@pair $fwd, $bwd, {});
    };
    (@pair $fwd:ident, $bwd:ident, { $($extra:tt)* }) => {
        impl<T: $crate::Scalar> $crate::Operator<T> for $fwd<T> {
            fn domain(&self) -> &$crate::Space<T> {
                &self.inner.domain
            }
            fn range(&self) -> &$crate::Space<T> {
                &self.inner.range
            }
            fn evaluate(
                &self,
                x: &$crate::Element<T>,
                out: &mut $crate::Element<T>,
            ) -> $crate::Result<()> {
                self.inner.forward(x, out)
            }
            fn is_linear(&self) -> bool {
                true
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
            $($extra)*
        }

        impl<T: $crate::Scalar> $crate::LinearOperator<T> for $fwd<T> {
            fn adjoint(&self) -> $crate::Result<$crate::LinOp<T>> {
                Ok(std::sync::Arc::new($bwd {
                    inner: self.inner.clone(),
                }))
            }
            fn norm_cache(&self) -> Option<&$crate::NormCache> {
                Some(&self.inner.norm)
            }
        }

        // The adjoint maps the forward operator's range back to its domain.
        #[allow(clippy::misnamed_getters)]
        impl<T: $crate::Scalar> $crate::Operator<T> for $bwd<T> {
            fn domain(&self) -> &$crate::Space<T> {
                &self.inner.range
            }
            fn range(&self) -> &$crate::Space<T> {
                &self.inner.domain
            }
            fn evaluate(
                &self,
                y: &$crate::Element<T>,
                out: &mut $crate::Element<T>,
            ) -> $crate::Result<()> {
                self.inner.backward(y, out)
            }
            fn is_linear(&self) -> bool {
                true
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
            $($extra)*
        }

        impl<T: $crate::Scalar> $crate::LinearOperator<T> for $bwd<T> {
            fn adjoint(&self) -> $crate::Result<$crate::LinOp<T>> {
                Ok(std::sync::Arc::new($fwd {
                    inner: self.inner.clone(),
                }))
            }
            fn norm_cache(&self) -> Option<&$crate::NormCache> {
                Some(&self.inner.norm)
            }
        }
    };
}

pub(crate) use forward_backward_pair;
